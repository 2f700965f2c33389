// Opening the database: a pool whose connections use the store's schema, the schema created or
// checked once, and a location string for messages that never carries the password.
import { HarnessError } from '@dsh/kernel'
import pg from 'pg'
import { migrate, quoteIdent } from './schema.js'

export interface ConnectOptions {
  url: string
  schema?: string
  poolSize?: number
}

/** `postgres://user@host:port/db` without the password (and the socket directory, when given). */
export function redact(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new HarnessError(
      'CONFIG_INVALID',
      `the session store URL is not a URL (${url.replace(/:[^:@/]*@/, ':***@')}); use postgres://user@host:port/database`,
      {},
    )
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new HarnessError(
      'CONFIG_INVALID',
      `the session store URL must start with postgres:// (got ${parsed.protocol}//...)`,
      {},
    )
  }
  parsed.password = ''
  const socket = parsed.searchParams.get('host')
  parsed.search = ''
  return `${parsed.toString()}${socket ? `?host=${socket}` : ''}`
}

export async function connect(options: ConnectOptions): Promise<{ pool: pg.Pool; location: string }> {
  const schema = options.schema || 'public'
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new HarnessError(
      'CONFIG_INVALID',
      `the session store schema "${schema}" is not a plain PostgreSQL name; use letters, digits and _ (like dsh_sessions)`,
      { schema },
    )
  }
  const location = `${redact(options.url)}${schema === 'public' ? '' : ` (schema ${schema})`}`
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 4,
    options: `-c search_path=${quoteIdent(schema)}`,
  })
  // An idle connection the server dropped must not crash the process; the next query reconnects.
  pool.on('error', () => {})
  try {
    const client = await pool.connect()
    try {
      await migrate(client, schema, location)
    } finally {
      client.release()
    }
  } catch (error) {
    await pool.end().catch(() => {})
    if (HarnessError.is(error)) throw error
    throw new HarnessError(
      'SESSION_STORE_UNAVAILABLE',
      `cannot open the session store at ${location}: ${(error as Error).message}; check the URL, that the server runs, and the credentials (PGPASSWORD or ~/.pgpass)`,
      { location },
      { cause: error },
    )
  }
  return { pool, location }
}
