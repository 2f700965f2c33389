// `ctx.sessionStore` backed by PostgreSQL (module `@dsh/session/store-pg`): a provider of the
// persistence seam of `@dsh/session/store` for sessions shared by many hosts. Leases live in the
// database with fencing tokens; full-text search is a `tsvector` column. See backend.ts and lease.ts.
import { type Context, HarnessError, Service } from '@dsh/kernel'
import { BackedStore } from '../store/backed-store.js'
import { type ChainVerdict, type SearchHit, sessionsDir } from '../store/index.js'
import { PgBackend } from './backend.js'

export interface PgConfig {
  /** `postgres://user@host:port/db` (a password is better in PGPASSWORD or ~/.pgpass). */
  url: string
  /** The PostgreSQL schema holding the tables (created when missing); default `public`. */
  schema?: string
  /** How long a lease outlives its last heartbeat (renewed every third of it); default 30 s. */
  leaseTtlMs?: number
  /** The local sessions directory (the search tool and other file users); empty means `$DSH_HOME/sessions`. */
  dir?: string
  /** Connections in the pool; default 4. */
  poolSize?: number
}

/** `ctx.sessionStore` on PostgreSQL. */
export class PgSessionStore extends BackedStore {
  static readonly provide = 'sessionStore'
  readonly kind = 'postgres'
  readonly leaseDir: string
  // Plain properties, not #private: Cordis hands out a proxy of the service, which #fields reject.
  private readonly settings: PgConfig
  private connected: PgBackend | undefined

  constructor(ctx: Context, config: PgConfig) {
    super(ctx)
    if (!config?.url) {
      throw new HarnessError(
        'CONFIG_INVALID',
        'the postgres session store needs `url` (postgres://user@host:port/db); set DSH_SESSION_STORE or the row config',
        {},
      )
    }
    this.settings = config
    this.leaseDir = sessionsDir(ctx, config.dir)
    ctx.effect(
      () => async () => {
        const backend = this.connected
        if (!backend) return
        await backend.releaseAll()
        await backend.pool.end()
      },
      'postgres.close',
    )
  }

  /** Connects and creates (or checks) the schema before the service is offered. */
  async [Service.init](): Promise<void> {
    // node-postgres loads here, not when the row's module is imported: a dsh on JSONL never loads it.
    const { connect } = await import('./connect.js')
    const { pool, location } = await connect(this.settings)
    this.connected = new PgBackend(pool, location, this.leaseDir, this.settings.leaseTtlMs ?? 30_000)
  }

  get backend(): PgBackend {
    if (!this.connected) throw new HarnessError('NOT_AVAILABLE', 'the postgres session store is not connected yet', {})
    return this.connected
  }

  lease(id: string) {
    return this.backend.lease(id)
  }
  search(text: string, limit: number): Promise<SearchHit[]> {
    return this.backend.search(text, limit)
  }
  verify(id: string): Promise<ChainVerdict> {
    return this.backend.verify(id)
  }
  rebuildSearch(): Promise<number> {
    return this.backend.rebuildSearch()
  }
}

export default PgSessionStore
