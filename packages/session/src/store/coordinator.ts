// The persistence coordinator `ctx.sessionPersistence`: subscribes to the session log, keeps one
// write-behind queue per session with bounded batching, takes each session's lease, answers
// `ctx.sessions.flush()`, and performs cold resume (validate, repair, commit, re-read).
import { type Context, directService, HarnessError, Service } from '@dsh/kernel'
import { type FlushOptions, repairEvents, type Session, type SessionEvent, type SessionHeader } from '../index.js'
import { leaseSession, type SessionStore, type StoredSession } from './index.js'
import { acquireLease, type Lease } from './lease.js'

declare module 'cordis' {
  interface Context {
    sessionPersistence: SessionPersistence
  }
}

export interface PersistenceConfig {
  /** Most events per write. */
  maxBatch?: number
  /** How long an appended event may wait before a background (unsynced) write starts. */
  delayMs?: number
}

interface Tracker {
  session: Session
  lease: Lease | undefined
  /** A store lease being taken (stores that lease in their database); writes wait for it. */
  leasing: Promise<void> | undefined
  /** Set until the header has been written. */
  header: SessionHeader | undefined
  queue: SessionEvent[]
  /** Written without a sync since the last sync. */
  dirty: boolean
  /** The tail of this session's write chain: writes never overlap. */
  chain: Promise<void>
  timer: NodeJS.Timeout | undefined
  /** The last write failure; kept until a write succeeds. */
  error: unknown
  /** A background drain is chained and has not started yet (one is enough for any number of appends). */
  backgroundQueued: boolean
}

function persistFailed(store: SessionStore, id: string, cause: unknown): HarnessError {
  if (HarnessError.is(cause) && cause.code !== 'SESSION_PERSIST_FAILED' && cause.code.startsWith('SESSION_')) {
    return cause
  }
  const reason = cause instanceof Error ? cause.message : String(cause)
  return new HarnessError(
    'SESSION_PERSIST_FAILED',
    `could not write session ${id} to ${store.locate(id)}: ${reason}; the events stay queued and the next flush retries`,
    { id, location: store.locate(id), reason },
    { cause },
  )
}

/** The coordinator's state and logic, kept off the Service (Cordis proxies service calls). */
export class Coordinator {
  readonly #trackers = new Map<string, Tracker>()
  /** Adoption of sessions that were live before this coordinator; flushes wait for it. */
  #ready: Promise<void> = Promise.resolve()
  /** Closes in progress, so callers can wait until the lease is released. */
  readonly #closing = new Map<string, Promise<void>>()
  readonly #ctx: Context
  readonly #store: SessionStore
  readonly #maxBatch: number
  readonly #delayMs: number

  constructor(ctx: Context, store: SessionStore, config: PersistenceConfig) {
    this.#ctx = ctx
    this.#store = store
    this.#maxBatch = Math.max(1, config.maxBatch ?? 512)
    this.#delayMs = Math.max(0, config.delayMs ?? 20)
  }

  get store(): SessionStore {
    return this.#store
  }

  /** Starts persisting a new live session: takes its lease and queues the header and any seeded events. */
  track(
    session: Session,
    durableLength: number,
    header: SessionHeader | undefined,
    lease?: Lease,
    failure?: unknown,
  ): void {
    if (this.#trackers.has(session.id)) return
    const tracker: Tracker = {
      session,
      lease,
      leasing: undefined,
      header,
      queue: session.events.slice(durableLength) as SessionEvent[],
      dirty: false,
      chain: Promise.resolve(),
      timer: undefined,
      error: undefined,
      backgroundQueued: false,
    }
    this.#trackers.set(session.id, tracker)
    if (failure !== undefined) {
      tracker.error = failure
      return
    }
    if (!lease && this.#store.lease) {
      // Taken asynchronously; the first write waits for it, so no append can overtake the lease.
      tracker.leasing = this.#store.lease(session.id).then(
        (taken) => {
          tracker.lease = taken
        },
        (error: unknown) => {
          tracker.error = error
        },
      )
    } else if (!lease) {
      try {
        tracker.lease = acquireLease(this.#store.leaseDir, session.id)
      } catch (error) {
        tracker.error = error
      }
    }
    if (tracker.header || tracker.queue.length) this.#schedule(tracker)
  }

  enqueue(session: Session, event: SessionEvent): void {
    const tracker = this.#trackers.get(session.id)
    if (!tracker || tracker.session !== session) return
    tracker.queue.push(event)
    if (tracker.queue.length < this.#maxBatch) this.#schedule(tracker)
    else if (!tracker.backgroundQueued) this.#drain(tracker, false).catch(() => {})
  }

  #schedule(tracker: Tracker): void {
    if (tracker.timer) return
    tracker.timer = setTimeout(() => {
      tracker.timer = undefined
      this.#drain(tracker, false).catch((error) => {
        this.#ctx.logger('session-persistence').warn(error)
      })
    }, this.#delayMs)
    tracker.timer.unref?.()
  }

  /** Chains a write of everything queued (in bounded batches), syncing at the end when `sync`. */
  #drain(tracker: Tracker, sync: boolean): Promise<void> {
    if (!sync) tracker.backgroundQueued = true
    const run = async () => {
      if (!sync) tracker.backgroundQueued = false
      await tracker.leasing
      if (tracker.lease === undefined) throw tracker.error
      while (tracker.header || tracker.queue.length) {
        const events = tracker.queue.slice(0, this.#maxBatch)
        const last = events.length === tracker.queue.length
        try {
          await this.#store.write(tracker.session.id, { header: tracker.header, events, sync: sync && last })
        } catch (error) {
          tracker.error = persistFailed(this.#store, tracker.session.id, error)
          throw tracker.error
        }
        tracker.error = undefined
        tracker.header = undefined
        tracker.queue.splice(0, events.length)
        tracker.dirty = !(sync && last)
      }
      if (sync && tracker.dirty) {
        try {
          await this.#store.write(tracker.session.id, { events: [], sync: true })
        } catch (error) {
          tracker.error = persistFailed(this.#store, tracker.session.id, error)
          throw tracker.error
        }
        tracker.dirty = false
      }
    }
    const next = tracker.chain.then(run, run)
    tracker.chain = next.catch(() => {})
    return next
  }

  /**
   * Starts persisting sessions that were live before this coordinator: each one's missing tail (or
   * its whole log, when the store does not have it) is queued. Flushes wait until this is done.
   */
  adopt(sessions: Session[]): Promise<void> {
    const run = async () => {
      for (const session of sessions) {
        if (this.#trackers.has(session.id)) continue
        let stored: StoredSession | undefined
        try {
          stored = await this.#store.read(session.id)
        } catch (error) {
          // Its flushes will reject with this error instead of silently not persisting it.
          this.track(session, session.length, undefined, undefined, error)
          continue
        }
        if (this.#trackers.has(session.id)) continue
        const durable = stored?.header ? stored.records.length : 0
        this.track(session, durable, stored?.header ? undefined : session.header)
      }
    }
    this.#ready = run()
    return this.#ready
  }

  /** Writes and (unless `sync: false`) syncs `session` (or every tracked session). Rejects with the first failure. */
  async flush(session?: Session, options: FlushOptions = {}): Promise<void> {
    await this.#ready
    const targets = session
      ? [this.#trackers.get(session.id)].filter((t): t is Tracker => t?.session === session)
      : [...this.#trackers.values()]
    await Promise.all(
      targets.map((tracker) => {
        if (tracker.timer) clearTimeout(tracker.timer)
        tracker.timer = undefined
        return this.#drain(tracker, options.sync !== false)
      }),
    )
  }

  /** Flushes a closed session, then releases its lease and the store's handles. */
  close(session: Session): Promise<void> {
    const tracker = this.#trackers.get(session.id)
    if (!tracker || tracker.session !== session) return Promise.resolve()
    const pending = this.#closing.get(session.id)
    if (pending) return pending
    const done = (async () => {
      try {
        await this.flush(session)
      } finally {
        this.#trackers.delete(session.id)
        await tracker.leasing
        await Promise.resolve(tracker.lease?.release()).catch((error: unknown) =>
          this.#ctx.logger('session-persistence').warn(error),
        )
        await this.#store.release(session.id).catch(() => {})
        this.#closing.delete(session.id)
      }
    })()
    this.#closing.set(session.id, done)
    return done
  }

  /** Resolves when a close of this id in progress has released the lease (at once when none is). */
  closed(id: string): Promise<void> {
    return (this.#closing.get(id) ?? Promise.resolve()).catch(() => {})
  }

  /** Flushes everything and releases every lease (dispose). Failures are logged, not thrown. */
  async shutdown(): Promise<void> {
    const trackers = [...this.#trackers.values()]
    await Promise.all([
      ...trackers.map((tracker) =>
        this.close(tracker.session).catch((error) => this.#ctx.logger('session-persistence').warn(error)),
      ),
      // Closes already under way (their trackers are gone) may still be releasing a lease.
      ...[...this.#closing.values()].map((closing) => closing.catch(() => {})),
    ])
  }

  /** Stops tracking without writing (a resume that could not register its session). */
  forget(id: string): void {
    const tracker = this.#trackers.get(id)
    if (!tracker) return
    if (tracker.timer) clearTimeout(tracker.timer)
    this.#trackers.delete(id)
    const release = () => Promise.resolve(tracker.lease?.release()).catch(() => {})
    if (tracker.leasing) void tracker.leasing.then(release)
    else void release()
  }

  /** True when this coordinator persists the session with this id. */
  tracks(id: string): boolean {
    return this.#trackers.has(id)
  }
}

/**
 * `ctx.sessionPersistence`: persists every session created, forked or resumed in this process
 * through `ctx.sessionStore`. Sessions already live when it starts are adopted (their missing tail is
 * written). Dispose flushes and releases leases.
 */
export class SessionPersistence extends Service {
  static readonly provide = 'sessionPersistence'
  static readonly inject = ['sessions', 'sessionStore']
  readonly core: Coordinator
  readonly home: Context

  constructor(ctx: Context, config: PersistenceConfig = {}) {
    super(ctx, 'sessionPersistence')
    this.home = ctx
    // The store's own object: every append batch calls it, and Cordis's tracing proxies cost more than
    // the write's bookkeeping (decision 351). This service is rebuilt when the store provider changes.
    const core = new Coordinator(ctx, directService(ctx, 'sessionStore')() ?? ctx.sessionStore, config ?? {})
    this.core = core
    ctx.on('session/created', (session) => {
      core.track(session, 0, session.header)
    })
    ctx.sessions.watch((session, event) => {
      core.enqueue(session, event)
    })
    ctx.on('session/closed', (session) => core.close(session))
    ctx.sessions.addFlushParticipant((session, options) => core.flush(session, options))
    ctx.effect(() => () => core.shutdown(), 'sessionPersistence.shutdown')
  }

  /** Starts persisting sessions that were live before this coordinator (e.g. after a provider swap). */
  [Service.init](): Promise<void> {
    return this.core.adopt(this.home.sessions.list())
  }

  /**
   * Closes a live session (`ctx.sessions.close`) and resolves once its last events are durable and
   * its lease is released. Rejects with the final flush's error (the lease is released regardless).
   */
  async close(session: Session): Promise<void> {
    const closing = this.core.close(session)
    this.ctx.sessions.close(session)
    await closing
  }

  /**
   * Resolves once a close of session `id` in progress (e.g. from a plain `ctx.sessions.close`, whose
   * lease is released asynchronously) has released its lease; at once when none is in progress.
   */
  closed(id: string): Promise<void> {
    return this.core.closed(id)
  }

  /** Writes and syncs one session or all; the same barrier `ctx.sessions.flush()` waits for. */
  flush(session?: Session, options?: FlushOptions): Promise<void> {
    return this.core.flush(session, options)
  }

  /**
   * Reads a durable session without taking its lease or repairing it: a validated, detached copy for
   * inspection and export. Throws SESSION_NOT_FOUND, SESSION_CORRUPT, SESSION_FORMAT_UNSUPPORTED.
   */
  async read(id: string): Promise<Session> {
    const stored = requireHeader(id, this.core.store, await this.core.store.read(id))
    return this.home.sessions.build(stored.header, stored.records, stored.location, id)
  }

  /**
   * Cold resume: takes the lease, reads the valid prefix (a torn final write is cut off), validates
   * header, envelopes and surface transitions, closes an open tail with synthetic events, commits
   * and syncs the repair, re-reads, and registers the re-read session as live (owned by the caller).
   * Returns the live session when this process already has it. Throws SESSION_LEASED,
   * SESSION_NOT_FOUND, SESSION_CORRUPT, SESSION_FORMAT_UNSUPPORTED, SESSION_PERSIST_FAILED.
   */
  async resume(id: string): Promise<Session> {
    const sessions = this.ctx.sessions
    const live = sessions.get(id)
    if (live) return live
    const store = this.core.store
    const lease = await leaseSession(store, id)
    try {
      const stored = requireHeader(id, store, await store.read(id))
      const draft = sessions.build(stored.header, stored.records, stored.location, id)
      if (stored.torn) await store.repairTail(id, stored)
      const repair = repairEvents(draft.openTail())
      if (repair.length > 0) {
        const before = draft.length
        for (const item of repair) draft.append(item.type, item.data, item.options)
        await store.write(id, { events: draft.events.slice(before) as SessionEvent[], sync: true })
      }
      let session = draft
      if (stored.torn || repair.length > 0) {
        // The file changed: hand back what it now holds, not what we meant to write.
        const reread = await store.read(id)
        if (!reread?.header || reread.torn || reread.records.length !== draft.length) {
          throw new HarnessError(
            'SESSION_CORRUPT',
            `${stored.location}: the repaired session did not read back whole`,
            {
              id,
              location: stored.location,
            },
          )
        }
        session = sessions.build(reread.header, reread.records, reread.location, id)
      }
      this.core.track(session, session.length, undefined, lease)
      try {
        sessions.restore(session)
      } catch (error) {
        this.core.forget(id)
        throw error
      }
      return session
    } catch (error) {
      if (!this.core.tracks(id)) await lease.release()
      throw error
    }
  }
}

/** Throws SESSION_NOT_FOUND for no file, SESSION_CORRUPT for a file without a complete header. */
function requireHeader(id: string, store: SessionStore, stored: StoredSession | undefined): StoredSession {
  if (!stored) throw notFound(id, store)
  if (stored.header === undefined) {
    throw new HarnessError(
      'SESSION_CORRUPT',
      `${stored.location}: holds no complete session header (its first write never finished); delete it`,
      { id, file: stored.location },
    )
  }
  return stored
}

function notFound(id: string, store: SessionStore): HarnessError {
  return new HarnessError('SESSION_NOT_FOUND', `no durable session ${id} at ${store.locate(id)}`, {
    id,
    location: store.locate(id),
  })
}

export default SessionPersistence
