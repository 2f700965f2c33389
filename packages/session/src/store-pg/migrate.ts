// Copying the sessions of one store (the local JSONL or SQLite) into PostgreSQL: what
// `dsh sessions migrate --to postgres://...` runs. Idempotent: a session already copied is left alone,
// one copied in part (an interrupted run, or a local session that grew since) gets its missing tail.
// Every session is verified by reading the copy back and comparing its derived messages. Both sides
// are leased while a session is copied, so a session open in a running dsh is skipped, not torn.
import { isDeepStrictEqual } from 'node:util'
import { HarnessError } from '@dsh/kernel'
import type { SessionEvent, SessionHeader } from '../index.js'
import { type Lease, leaseSession, type SessionStore, type StoredSession } from '../store/index.js'
import { PgBackend } from './backend.js'
import { connect } from './connect.js'

export interface MigrateTarget {
  url: string
  schema?: string
}

export interface Migrated {
  id: string
  /** copied: new there; appended: its missing tail was added; unchanged: already whole there. */
  outcome: 'copied' | 'appended' | 'unchanged' | 'skipped' | 'failed'
  /** Events the copy holds. */
  events: number
  reason?: string
}

/** Events per transaction on the target. */
const BATCH = 500

/**
 * Copies every session `source` lists into the PostgreSQL store at `target`. `derive` turns a stored
 * session into what the model sees (the caller builds it with ctx.sessions). Reports each session to
 * `report` as it goes and returns them all.
 */
export async function migrateSessions(
  source: SessionStore,
  target: MigrateTarget,
  derive: (stored: StoredSession, id: string) => unknown,
  report: (result: Migrated) => void = () => {},
): Promise<Migrated[]> {
  const { pool, location } = await connect(target)
  const backend = new PgBackend(pool, location, '', 30_000)
  const results: Migrated[] = []
  try {
    for (const summary of await source.summaries()) {
      const result = summary.error
        ? { id: summary.id, outcome: 'skipped' as const, events: 0, reason: summary.error }
        : await migrateOne(source, backend, summary.id, derive)
      results.push(result)
      report(result)
    }
  } finally {
    await backend.releaseAll()
    await pool.end()
  }
  return results
}

async function migrateOne(
  source: SessionStore,
  target: PgBackend,
  id: string,
  derive: (stored: StoredSession, id: string) => unknown,
): Promise<Migrated> {
  const leases: Lease[] = []
  try {
    leases.push(await leaseSession(source, id))
    leases.push(await target.lease(id))
    const stored = await source.read(id)
    if (!stored?.header) return { id, outcome: 'skipped', events: 0, reason: 'it has no complete header' }
    if (stored.torn) {
      return {
        id,
        outcome: 'skipped',
        events: 0,
        reason: `its last write was torn; resume it once (dsh run --resume ${id}) to repair it, then migrate again`,
      }
    }
    // Building the derived messages validates the log first: only a readable session is copied.
    const original = derive(stored, id)
    const existing = await target.read(id)
    const from = existing ? agreedPrefix(id, stored, existing) : 0
    const header = existing ? undefined : (stored.header as SessionHeader)
    const events = stored.records.slice(from) as SessionEvent[]
    for (let start = 0; (header && start === 0) || start < events.length; start += BATCH) {
      await target.write(id, {
        ...(header && start === 0 ? { header } : {}),
        events: events.slice(start, start + BATCH),
        sync: start + BATCH >= events.length,
      })
    }
    const copy = await target.read(id)
    if (!copy || copy.records.length !== stored.records.length || !isDeepStrictEqual(derive(copy, id), original)) {
      throw new HarnessError(
        'SESSION_MIGRATE_MISMATCH',
        `the copy of ${id} does not read back as the original (its derived messages differ); nothing else was changed`,
        { id },
      )
    }
    const outcome = !existing ? 'copied' : from < stored.records.length ? 'appended' : 'unchanged'
    return { id, outcome, events: copy.records.length }
  } catch (error) {
    const code = (error as { code?: unknown }).code
    const reason = `${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message}`
    return { id, outcome: code === 'SESSION_LEASED' ? 'skipped' : 'failed', events: 0, reason }
  } finally {
    for (const lease of leases.reverse()) await Promise.resolve(lease.release()).catch(() => {})
  }
}

/** How many events the target already holds of the source's log; throws when the two disagree. */
function agreedPrefix(id: string, stored: StoredSession, existing: StoredSession): number {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)
  const differs = (what: string) =>
    new HarnessError(
      'SESSION_MIGRATE_CONFLICT',
      `${existing.location} already holds another session ${id} (${what}); remove one of them before migrating`,
      { id, location: existing.location },
    )
  if (!same(existing.header, stored.header)) throw differs('a different header')
  if (existing.records.length > stored.records.length) throw differs('more events than the local one')
  existing.records.forEach((record, index) => {
    if (!same(record, stored.records[index])) throw differs(`event ${index} differs`)
  })
  return existing.records.length
}
