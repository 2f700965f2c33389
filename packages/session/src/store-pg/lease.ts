// Leases across hosts: one `dsh_leases` row per session names its owner (host, pid, boot id) and an
// expiry a heartbeat keeps pushing forward. Every take-over draws a new fencing token from a sequence;
// each write checks its holder's token in its own transaction (see backend.ts), so a holder that was
// paused or cut off past its expiry can never append after another host took over. Time is the
// database's clock (`now()`), never a host's. See docs/decisions/320-postgres-session-store.md.
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { HarnessError } from '@dsh/kernel'
import type { Pool } from 'pg'
import { type Lease, type LeaseOwner, ownerAlive, processStartTime } from '../store/index.js'
import { inTransaction } from './transaction.js'

/** The row a lease is: who holds it, until when (database time), with which token. */
export interface LeaseRow {
  token: string
  host: string
  pid: number
  boot_id: string | null
  start_time: string | null
  acquired_at: Date
  /** True while the expiry is in the future (computed by the database). */
  live: boolean
}

/** The kernel's boot id: tells a dead owner on this host (rebooted since) from a live one. */
export function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  } catch {
    return undefined
  }
}

/** The owner of a lease row, in the shape lock-file leases report. */
export function ownerOf(row: LeaseRow): LeaseOwner {
  return {
    pid: row.pid,
    ...(row.start_time !== null ? { startTime: Number(row.start_time) } : {}),
    host: row.host,
    acquiredAt: row.acquired_at.getTime(),
    token: row.token,
  }
}

/**
 * True when the row's owner may still write: its expiry is ahead, and it is not known dead. An owner on
 * this host is known dead when the kernel rebooted since (another boot id) or its process is gone
 * (pid and start time, as lock files judge); an owner elsewhere is judged by expiry alone.
 */
export function holderAlive(row: LeaseRow, boot = bootId()): boolean {
  if (!row.live) return false
  if (row.host !== hostname()) return true
  if (row.boot_id && boot && row.boot_id !== boot) return false
  return ownerAlive(ownerOf(row))
}

export function leasedError(id: string, location: string, row: LeaseRow): HarnessError {
  const when = row.acquired_at.toISOString()
  return new HarnessError(
    'SESSION_LEASED',
    `session ${id} is open on another host or process (pid ${row.pid} on ${row.host}, since ${when}); close it there first, or wait until its lease expires if that host is gone`,
    { id, lock: location, ...ownerOf(row) },
  )
}

export function lostError(id: string, location: string, token: string, now: LeaseRow | undefined): HarnessError {
  const who = now ? `pid ${now.pid} on ${now.host} took it over at ${now.acquired_at.toISOString()}` : 'it was released'
  return new HarnessError(
    'SESSION_LEASE_LOST',
    `session ${id}: this process lost its lease (fencing token ${token}; ${who}), so its append was refused and nothing was written; resume the session to continue from what is durable`,
    { id, location, token, ...(now ? { owner: ownerOf(now) } : {}) },
  )
}

const SELECT_ROW = `SELECT token::text, host, pid, boot_id, start_time::text, acquired_at, expires_at > now() AS live
  FROM dsh_leases WHERE session_id = $1`

/** A held lease: renews itself until released; `lost` once a renewal found another token. */
export class PgLease implements Lease {
  readonly path: string
  lost = false
  #timer: NodeJS.Timeout | undefined
  #released = false

  constructor(
    readonly id: string,
    readonly owner: LeaseOwner,
    location: string,
    readonly pool: Pool,
    ttlMs: number,
    onRelease: () => void,
  ) {
    this.path = location
    this.#onRelease = onRelease
    this.#timer = setInterval(() => void this.renew(ttlMs), Math.max(50, Math.floor(ttlMs / 3)))
    this.#timer.unref()
  }

  readonly #onRelease: () => void

  get token(): string {
    return this.owner.token
  }

  /** Pushes the expiry forward; marks the lease lost when another holder's token replaced ours. */
  async renew(ttlMs: number): Promise<void> {
    if (this.#released || this.lost) return
    try {
      const result = await this.pool.query(
        `UPDATE dsh_leases SET expires_at = now() + $3 * interval '1 millisecond' WHERE session_id = $1 AND token = $2`,
        [this.id, this.token, ttlMs],
      )
      if (result.rowCount === 0) this.#lose()
    } catch {
      // A failed renewal (database unreachable) is retried at the next beat; writes check the token anyway.
    }
  }

  #lose(): void {
    this.lost = true
    if (this.#timer) clearInterval(this.#timer)
  }

  async release(): Promise<void> {
    if (this.#released) return
    this.#released = true
    if (this.#timer) clearInterval(this.#timer)
    this.#onRelease()
    await this.pool.query('DELETE FROM dsh_leases WHERE session_id = $1 AND token = $2', [this.id, this.token])
  }
}

/**
 * Takes the lease of session `id`: inserts the row, or takes over a row whose holder is expired or
 * known dead, drawing a new fencing token. Throws SESSION_LEASED naming a live holder.
 */
export async function takeLease(
  pool: Pool,
  id: string,
  location: string,
  ttlMs: number,
): Promise<{ token: string; owner: LeaseOwner }> {
  const me = {
    host: hostname(),
    pid: process.pid,
    boot: bootId() ?? null,
    start: processStartTime(process.pid) ?? null,
  }
  const values = [id, me.host, me.pid, me.boot, me.start, ttlMs]
  for (let attempt = 0; attempt < 5; attempt++) {
    const taken = await inTransaction(pool, 'BEGIN', async (client) => {
      const current = (await client.query<LeaseRow>(`${SELECT_ROW} FOR UPDATE`, [id])).rows[0]
      if (current) {
        if (holderAlive(current, me.boot ?? undefined)) throw leasedError(id, location, current)
        return (
          await client.query<{ token: string; acquired_at: Date }>(
            `UPDATE dsh_leases SET token = nextval('dsh_lease_tokens'), host = $2, pid = $3, boot_id = $4,
               start_time = $5, acquired_at = now(), expires_at = now() + $6 * interval '1 millisecond'
             WHERE session_id = $1 RETURNING token::text, acquired_at`,
            values,
          )
        ).rows[0]
      }
      return (
        await client.query<{ token: string; acquired_at: Date }>(
          `INSERT INTO dsh_leases (session_id, token, host, pid, boot_id, start_time, expires_at)
           VALUES ($1, nextval('dsh_lease_tokens'), $2, $3, $4, $5, now() + $6 * interval '1 millisecond')
           ON CONFLICT (session_id) DO NOTHING RETURNING token::text, acquired_at`,
          values,
        )
      ).rows[0]
    })
    if (!taken) continue // another opener inserted first: judge its row
    const owner: LeaseOwner = {
      pid: me.pid,
      ...(me.start !== null ? { startTime: me.start } : {}),
      host: me.host,
      acquiredAt: taken.acquired_at.getTime(),
      token: taken.token,
    }
    return { token: taken.token, owner }
  }
  throw new HarnessError(
    'SESSION_LEASED',
    `could not take the lease of session ${id} at ${location}: it keeps changing`,
    {
      id,
      lock: location,
    },
  )
}

/** The current row of a session's lease, if any. */
export async function leaseRow(pool: Pool | { query: Pool['query'] }, id: string): Promise<LeaseRow | undefined> {
  return (await pool.query<LeaseRow>(SELECT_ROW, [id])).rows[0]
}
