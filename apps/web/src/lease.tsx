// Sessions another host holds (a session store shared by many `dsh web` hosts, e.g. PostgreSQL): the
// list row says busy (or that the holder's lease lapsed), the open session says who has it and, once
// its lease expired, offers to take it over here. Taking over is resuming: the store hands the lease
// to this host with a new fencing token, so the old holder can no longer append.

import type { SessionSummary } from '@dsh/surfaces/wire'
import { useState } from 'preact/hooks'
import { ApiFailure, api } from './connection'
import './lease.css'

type Holder = NonNullable<SessionSummary['holder']>

function owner(holder: Holder): string {
  return `pid ${holder.pid} on ${holder.host}`
}

function clock(ms: number): string {
  return new Date(ms).toLocaleTimeString()
}

/** Whether a refused resume only says another host holds the session (the notice shows that). */
export function leasedElsewhere(error: unknown): boolean {
  return error instanceof ApiFailure && error.code === 'SESSION_LEASED'
}

/** The list row's mark: busy on another host, or its holder's lease expired. */
export function LeaseBadge({ row }: { row: SessionSummary }) {
  const holder = row.holder
  if (!holder || row.attached) return null
  return (
    <span
      class={`lease ${holder.live ? 'busy' : 'expired'}`}
      data-holder-pid={holder.pid}
      title={`open with ${owner(holder)} since ${clock(holder.acquiredAt)}`}
    >
      {holder.live ? `busy · ${owner(holder)}` : 'lease expired'}
    </span>
  )
}

/** Above the open session: who holds it, and the take-over once their lease expired. */
export function LeaseNotice({ row, failed }: { row: SessionSummary | undefined; failed: (error: unknown) => void }) {
  const [taking, setTaking] = useState(false)
  const holder = row?.holder
  if (!row || !holder) return null
  if (row.attached) {
    return (
      <div class="lease-notice lost" role="alert">
        {owner(holder)} took this session over at {clock(holder.acquiredAt)}; this host can no longer write to it.
      </div>
    )
  }
  if (holder.live) {
    return (
      <div class="lease-notice busy" role="status" data-holder-pid={holder.pid}>
        Open with {owner(holder)} since {clock(holder.acquiredAt)}: read-only here. Its lease runs to{' '}
        {clock(holder.expiresAt)} and is renewed while that host lives; if it stops, you can take the session over once
        the lease expires.
      </div>
    )
  }
  const takeOver = () => {
    setTaking(true)
    api('POST', `/api/sessions/${row.sessionId}/resume`)
      .catch(failed)
      .finally(() => setTaking(false))
  }
  return (
    <div class="lease-notice expired" role="status" data-holder-pid={holder.pid}>
      The lease of {owner(holder)} expired at {clock(holder.expiresAt)}.{' '}
      <button type="button" class="take-over" disabled={taking} onClick={takeOver}>
        Take over
      </button>
    </div>
  )
}
