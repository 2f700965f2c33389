// The single-writer lease: one lock file per session holding the owner's pid and process start time.
// A lock whose owner is dead (or whose pid was reused by a younger process) is reclaimed; a live
// owner makes the second opener fail with SESSION_LEASED naming it. See docs/decisions/session-lease.md.
import { randomUUID } from 'node:crypto'
import { closeSync, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { HarnessError } from '@dsh/kernel'

export interface LeaseOwner {
  pid: number
  /** The owner's process start time (Linux clock ticks since boot), when the platform tells. */
  startTime?: number
  host: string
  /** Milliseconds since the epoch. */
  acquiredAt: number
  /** Distinguishes two leases taken by one process. */
  token: string
}

export interface Lease {
  readonly path: string
  readonly owner: LeaseOwner
  /** Gives the lease up if it is still ours (a lock file is removed at once; a store's lease may be async). Idempotent. */
  release(): void | Promise<void>
}

/** The start time of a process from /proc, or undefined where there is no /proc. */
export function processStartTime(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const value = Number(fields[19])
    return Number.isFinite(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** True when the owner recorded in a lock (or any record of a process) is still running on this host. */
export function ownerAlive(owner: Pick<LeaseOwner, 'pid' | 'host' | 'startTime'>): boolean {
  if (owner.host !== hostname()) return true
  try {
    process.kill(owner.pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  if (owner.startTime === undefined) return true
  const now = processStartTime(owner.pid)
  return now === undefined || now === owner.startTime
}

/** The owner recorded in a lock file, or undefined when there is none; an unreadable lock is `null`. */
export function readLease(path: string): LeaseOwner | null | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  try {
    const owner = JSON.parse(text) as LeaseOwner
    return typeof owner.pid === 'number' && typeof owner.host === 'string' ? owner : null
  } catch {
    return null
  }
}

function tryCreate(path: string, owner: LeaseOwner): boolean {
  let fd: number
  try {
    // 0600 like the logs: the owner's pid, host and token are nobody else's business.
    fd = openSync(path, 'wx', 0o600)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  }
  try {
    writeSync(fd, JSON.stringify(owner))
  } finally {
    closeSync(fd)
  }
  return true
}

function leased(id: string, path: string, owner: LeaseOwner): HarnessError {
  const when = new Date(owner.acquiredAt).toISOString()
  return new HarnessError(
    'SESSION_LEASED',
    `session ${id} is open in another process (pid ${owner.pid} on ${owner.host}, since ${when}); close it there first, or delete ${path} if that process is gone`,
    { id, lock: path, ...owner },
  )
}

/**
 * Takes the lease of session `id` in `dir`. Throws SESSION_LEASED when a live process holds it
 * (including this process, through another coordinator). A dead owner's lock is reclaimed: renamed
 * aside atomically, checked to still be the stale one, then replaced.
 */
export function acquireLease(dir: string, id: string): Lease {
  const path = join(dir, `${id}.lock`)
  const owner: LeaseOwner = {
    pid: process.pid,
    startTime: processStartTime(process.pid),
    host: hostname(),
    acquiredAt: Date.now(),
    token: randomUUID(),
  }
  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(path, owner)) return makeLease(path, owner)
    const current = readLease(path)
    if (current === undefined) continue
    // A lock we cannot parse was torn by a crash between create and write: it has no live owner.
    if (current !== null && ownerAlive(current)) throw leased(id, path, current)
    const aside = `${path}.${randomUUID()}.stale`
    try {
      renameSync(path, aside)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw error
    }
    const moved = readLease(aside)
    if (moved?.token !== current?.token || (moved !== null && moved !== undefined && ownerAlive(moved))) {
      // Another opener replaced the stale lock between our read and rename: put theirs back.
      try {
        linkSync(aside, path)
      } catch {}
      unlinkSync(aside)
      if (moved) throw leased(id, path, moved)
      continue
    }
    unlinkSync(aside)
  }
  throw new HarnessError('SESSION_LEASED', `could not take the lease of session ${id} at ${path}: it keeps changing`, {
    id,
    lock: path,
  })
}

function makeLease(path: string, owner: LeaseOwner): Lease {
  let released = false
  return {
    path,
    owner,
    release() {
      if (released) return
      released = true
      if (readLease(path)?.token === owner.token) unlinkSync(path)
    },
  }
}
