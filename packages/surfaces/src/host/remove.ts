// Deleting durable sessions, shared by `dsh sessions rm` and the web page: under each session's lease
// it is removed from the store, then the attachment blobs it referenced that no remaining session
// references are swept (blobs younger than a minute stay: a running dsh may be about to log them).
import { refsIn } from '@dsh/attachments'
import { type Context, HarnessError } from '@dsh/kernel'
import { checkSessionId } from '@dsh/session'
import { leaseSession, type SessionStore } from '@dsh/session/store'

/** Blobs written within this window stay: a running dsh may be about to log an event that names one. */
const BLOB_GRACE_MS = 60_000

export interface RemoveReport {
  removed: string[]
  /** The blob sweep, when the attachments row is loaded and the sessions referenced blobs. */
  blobs?: { removed: number; keptYoung: number }
}

/** Deletes sessions `ids` (SESSION_NOT_FOUND, SESSION_LEASED, NOT_AVAILABLE for a store without delete). */
export async function removeSessions(ctx: Context, ids: readonly string[]): Promise<RemoveReport> {
  const store = ctx.get('sessionStore')
  if (!store?.remove) {
    throw new HarnessError(
      'NOT_AVAILABLE',
      `the ${store?.kind ?? 'configured'} session store cannot delete sessions`,
      {},
    )
  }
  const remove = store.remove.bind(store)
  const candidates = new Set<string>()
  const removed = new Set<string>()
  for (const id of ids) {
    const lease = await leaseSession(store, checkSessionId(id))
    try {
      const stored = await store.read(id)
      if (!stored)
        throw new HarnessError('SESSION_NOT_FOUND', `no durable session ${id} at ${store.locate(id)}`, { id })
      refsIn(stored.records, candidates)
      await remove(id)
      removed.add(id)
    } finally {
      await lease.release()
    }
  }
  const attachments = ctx.get('attachments')
  if (!attachments || candidates.size === 0) return { removed: [...removed] }
  const keep = await refsInUse(store, removed)
  const report = await attachments.sweep(keep, { candidates, minAgeMs: BLOB_GRACE_MS })
  return { removed: [...removed], blobs: { removed: report.removed.length, keptYoung: report.keptYoung } }
}

/** The attachment refs of every durable session except `except` (raw records: a damaged log still counts). */
async function refsInUse(store: SessionStore, except: ReadonlySet<string>): Promise<Set<string>> {
  const keep = new Set<string>()
  for (const summary of await store.summaries()) {
    if (except.has(summary.id)) continue
    const stored = await store.read(summary.id)
    if (stored) refsIn(stored.records, keep)
  }
  return keep
}
