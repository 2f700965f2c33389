// The PostgreSQL backend of `ctx.sessionStore`: events in the append-only `dsh_events` keyed by
// (session, seq), one transaction per write (the flush barrier's batch), the holder's fencing token
// checked in that same transaction, a per-session summary row kept in step, and the events' text in a
// `tsvector` column for full-text search.
import { HarnessError } from '@dsh/kernel'
import type { Pool, PoolClient } from 'pg'
import {
  type ChainVerdict,
  type SearchHit,
  type SessionHolder,
  type SessionStore,
  type SessionSummary,
  type StoredSession,
  sessionExists,
  textOf,
  titleOf,
  type WriteBatch,
  writtenTitleOf,
} from '../store/index.js'
import { chainHash } from '../store/line-seal.js'
import {
  type ChainRow,
  checkEventCount,
  eventOfRow,
  parseColumn,
  type SessionRow,
  summaryOfRow,
  verifyRows,
} from '../store/rows.js'
import { addToSums, emptySums, parseSums, type SessionSums } from '../store/sums.js'
import { bootId, holderAlive, type LeaseRow, leasedError, leaseRow, lostError, PgLease, takeLease } from './lease.js'
import { inTransaction } from './transaction.js'

/** The lease columns joined to a session row (all null when no one holds it). */
type LeaseColumns = { [K in keyof LeaseRow]: LeaseRow[K] | null } & { expires_at: Date | null }

/** The PostgreSQL backend; a plain class so the Service can hold it (Cordis proxies services). */
export class PgBackend implements SessionStore {
  readonly kind = 'postgres'
  /** Leases live in the database; this is only where local files (none today) would go. */
  readonly leaseDir: string
  readonly #held = new Map<string, PgLease>()

  constructor(
    readonly pool: Pool,
    /** The database without credentials (`postgres://user@host/db`), for messages. */
    readonly location: string,
    leaseDir: string,
    readonly leaseTtlMs: number,
  ) {
    this.leaseDir = leaseDir
  }

  locate(id: string): string {
    return `${this.location}#${id}`
  }

  async lease(id: string): Promise<PgLease> {
    const location = this.locate(id)
    const { owner } = await takeLease(this.pool, id, location, this.leaseTtlMs)
    const lease = new PgLease(id, owner, location, this.pool, this.leaseTtlMs, () => {
      if (this.#held.get(id) === lease) this.#held.delete(id)
    })
    this.#held.set(id, lease)
    return lease
  }

  async write(id: string, batch: WriteBatch): Promise<void> {
    await this.#transaction(batch.sync, async (client) => {
      await this.#fence(client, id)
      const { header } = batch
      // The chain continues from the session row's last hash; a new session's starts at its header.
      let previous: string | undefined
      let sums: SessionSums | undefined
      if (header) {
        const headerText = JSON.stringify(header)
        previous = chainHash(undefined, headerText)
        sums = emptySums(header.seedLength)
        try {
          await client.query(
            `INSERT INTO dsh_sessions (id, header, cwd, created_at, parent, updated_at) VALUES ($1, $2, $3, $4, $5, $4)`,
            [id, headerText, header.cwd, header.createdAt, header.parentSession ?? null],
          )
        } catch (error) {
          if ((error as { code?: string }).code === '23505') throw sessionExists(id, this.locate(id))
          throw error
        }
      } else if (batch.events.length > 0) {
        const row = await client.query<{ last_hash: string | null; sums: string | null }>(
          'SELECT last_hash, sums FROM dsh_sessions WHERE id = $1',
          [id],
        )
        previous = row.rows[0]?.last_hash ?? undefined
        sums = parseSums(row.rows[0]?.sums)
      }
      if (sums) addToSums(sums, batch.events)
      const events = batch.events
      const bodies = events.map((event) => JSON.stringify(event))
      const hashes = bodies.map((body) => {
        previous = chainHash(previous, body)
        return previous
      })
      let firstTitle: string | undefined
      let written: string | undefined
      for (const event of events) {
        firstTitle ??= titleOf(event)
        written = writtenTitleOf(event) ?? written
      }
      // Dense seqs: the batch must start where the durable log ends (a gap or overlap is a bug upstream).
      const touched = await client.query<{ event_count: number }>(
        `UPDATE dsh_sessions SET updated_at = COALESCE($2, updated_at), event_count = event_count + $3,
           title = COALESCE($4, title, $5), last_hash = COALESCE($7, last_hash), sums = COALESCE($8, sums)
         WHERE id = $1 AND event_count = COALESCE($6, event_count) RETURNING event_count`,
        [
          id,
          events.at(-1)?.time ?? null,
          events.length,
          written ?? null,
          firstTitle ?? null,
          events[0]?.seq ?? null,
          previous ?? null,
          sums ? JSON.stringify(sums) : null,
        ],
      )
      if (touched.rowCount === 0) {
        const row = await client.query<{ event_count: number }>('SELECT event_count FROM dsh_sessions WHERE id = $1', [
          id,
        ])
        const count = row.rows[0]?.event_count
        if (count === undefined) {
          throw new HarnessError('SESSION_NOT_FOUND', `session ${id} has no header in ${this.location}`, { id })
        }
        throw new HarnessError(
          'SESSION_PERSIST_FAILED',
          `${this.locate(id)}: the batch starts at event ${events[0]?.seq} but ${count} events are durable; nothing was written`,
          { id, location: this.locate(id), durable: count, first: events[0]?.seq },
        )
      }
      if (events.length > 0) {
        await client.query(
          `INSERT INTO dsh_events (session_id, seq, type, body, search, hash)
           SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::text[])`,
          [
            id,
            events.map((event) => event.seq),
            events.map((event) => event.type),
            bodies,
            events.map((event) => textOf(event) || null),
            hashes,
          ],
        )
      }
    })
  }

  /**
   * The fencing check, inside the write's transaction: a holder's token must still be the row's (the
   * UPDATE also renews the expiry, and its row lock orders it against a take-over). A write without
   * a lease (a maintenance write) is refused while another live holder has one.
   */
  async #fence(client: PoolClient, id: string): Promise<void> {
    const held = this.#held.get(id)
    if (held) {
      const renewed = await client.query(
        `UPDATE dsh_leases SET expires_at = now() + $3 * interval '1 millisecond' WHERE session_id = $1 AND token = $2`,
        [id, held.token, this.leaseTtlMs],
      )
      if (renewed.rowCount === 0) {
        held.lost = true
        throw lostError(id, this.locate(id), held.token, await leaseRow(client, id))
      }
      return
    }
    const row = await leaseRow(client, id)
    if (row && holderAlive(row)) throw leasedError(id, this.locate(id), row)
    // Make the transaction write WAL even when the batch is empty, so a syncing commit flushes what
    // earlier unsynced commits left in the WAL buffers.
    await client.query('SELECT pg_current_xact_id()')
  }

  /** Runs `body` in one transaction; `sync: false` commits without waiting for the WAL flush. */
  #transaction(sync: boolean, body: (client: PoolClient) => Promise<void>): Promise<void> {
    return inTransaction(this.pool, 'BEGIN', async (client) => {
      if (!sync) await client.query('SET LOCAL synchronous_commit = off')
      await body(client)
    })
  }

  async read(id: string): Promise<StoredSession | undefined> {
    const location = this.locate(id)
    // One snapshot for the header, the count and the events.
    return inTransaction(this.pool, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', async (client) => {
      const row = (
        await client.query<{ header: string; event_count: number }>(
          'SELECT header, event_count FROM dsh_sessions WHERE id = $1',
          [id],
        )
      ).rows[0]
      if (!row) return undefined
      const events = await client.query<{ seq: number; body: string }>(
        'SELECT seq, body FROM dsh_events WHERE session_id = $1 ORDER BY seq',
        [id],
      )
      const records = events.rows.map(({ seq, body }) => eventOfRow(location, seq, body))
      checkEventCount(location, records.length, row.event_count, 'the database was changed by hand')
      return { header: parseColumn(location, row.header, 'the header'), records, location }
    })
  }

  /** Checks the session's hash chain as stored (see `verifyRows`), in one snapshot. */
  async verify(id: string): Promise<ChainVerdict> {
    return inTransaction(this.pool, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', async (client) => {
      const row = (
        await client.query<{ header: string; event_count: number }>(
          'SELECT header, event_count FROM dsh_sessions WHERE id = $1',
          [id],
        )
      ).rows[0]
      if (!row) throw new HarnessError('SESSION_NOT_FOUND', `no session ${id} in ${this.location}`, { id })
      const events = await client.query<ChainRow>(
        'SELECT seq, body, hash FROM dsh_events WHERE session_id = $1 ORDER BY seq',
        [id],
      )
      return verifyRows(row.header, events.rows, row.event_count)
    })
  }

  /** Transactions leave no torn tail. */
  async repairTail(): Promise<void> {}

  /** Every session, newest first, each with the lease another process holds on it (see `holderOf`). */
  async summaries(): Promise<SessionSummary[]> {
    const rows = await this.pool.query<SessionRow & LeaseColumns>(
      `SELECT s.id, s.cwd, s.created_at::text, s.parent, s.title, s.updated_at::text, s.event_count, s.sums,
         l.token::text, l.host, l.pid, l.boot_id, l.start_time::text, l.acquired_at, l.expires_at,
         l.expires_at > now() AS live
       FROM dsh_sessions s LEFT JOIN dsh_leases l ON l.session_id = s.id ORDER BY s.updated_at DESC`,
    )
    const boot = bootId()
    return rows.rows.map((row) => {
      const holder = this.#holderOf(row, boot)
      return { ...summaryOfRow(row, this.locate(row.id)), ...(holder ? { holder } : {}) }
    })
  }

  /** The lease row as a list shows it; undefined when there is none or it is this backend's own. */
  #holderOf(row: SessionRow & LeaseColumns, boot: string | undefined): SessionHolder | undefined {
    const { token, host, pid, acquired_at, expires_at, live } = row
    if (token === null || host === null || pid === null || acquired_at === null || expires_at === null) return undefined
    if (this.#held.get(row.id)?.token === token) return undefined
    const lease: LeaseRow = {
      token,
      host,
      pid,
      boot_id: row.boot_id,
      start_time: row.start_time,
      acquired_at,
      live: live === true,
    }
    return {
      host,
      pid,
      acquiredAt: acquired_at.getTime(),
      expiresAt: expires_at.getTime(),
      live: holderAlive(lease, boot),
    }
  }

  async remove(id: string): Promise<boolean> {
    const result = await this.pool.query('DELETE FROM dsh_sessions WHERE id = $1', [id])
    return (result.rowCount ?? 0) > 0
  }

  async release(): Promise<void> {}

  /** Full-text search over model-visible text: every term must match; best matches first. */
  async search(text: string, limit: number): Promise<SearchHit[]> {
    const terms = (text.match(/[\p{L}\p{N}_]+/gu) ?? []).join(' ')
    if (!terms) return []
    const rows = await this.pool.query<{ session_id: string; seq: number; type: string; snippet: string }>(
      `SELECT session_id, seq, type,
         ts_headline('simple', search, q, 'StartSel=[, StopSel=], MaxWords=24, MinWords=8') AS snippet
       FROM dsh_events, plainto_tsquery('simple', $1) AS q
       WHERE tsv @@ q ORDER BY ts_rank(tsv, q) DESC, session_id, seq LIMIT $2`,
      [terms, limit],
    )
    return rows.rows.map((row) => ({ sessionId: row.session_id, seq: row.seq, type: row.type, snippet: row.snippet }))
  }

  /**
   * Recomputes every event's search text from its body (after the text rules changed) and rebuilds
   * the index; returns how many events have searchable text.
   */
  async rebuildSearch(): Promise<number> {
    const sessions = await this.pool.query<{ id: string }>('SELECT id FROM dsh_sessions')
    let documents = 0
    for (const { id } of sessions.rows) {
      const events = await this.pool.query<{ seq: number; body: string; search: string | null }>(
        'SELECT seq, body, search FROM dsh_events WHERE session_id = $1 ORDER BY seq',
        [id],
      )
      const changed: { seq: number; text: string | null }[] = []
      for (const row of events.rows) {
        let text: string | null = null
        try {
          text = textOf(JSON.parse(row.body)) || null
        } catch {}
        if (text) documents++
        if (text !== row.search) changed.push({ seq: row.seq, text })
      }
      if (changed.length > 0) {
        await this.pool.query(
          `UPDATE dsh_events e SET search = c.text FROM unnest($2::integer[], $3::text[]) AS c(seq, text)
           WHERE e.session_id = $1 AND e.seq = c.seq`,
          [id, changed.map((c) => c.seq), changed.map((c) => c.text)],
        )
      }
    }
    await this.pool.query('REINDEX INDEX dsh_events_tsv')
    return documents
  }

  /** Releases every lease this backend holds (a closing host). */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.#held.values()].map((lease) => lease.release().catch(() => {})))
  }
}
