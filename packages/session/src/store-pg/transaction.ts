// One transaction on a pooled connection: `begin` opens it (isolation and access mode included),
// `body` runs in it, a throw rolls it back; the connection always returns to the pool.
import type { Pool, PoolClient } from 'pg'

export async function inTransaction<T>(
  pool: Pool,
  begin: string,
  body: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query(begin)
    const result = await body(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    throw error
  } finally {
    client.release()
  }
}
