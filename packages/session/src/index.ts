// @dsh/session: the session log service `ctx.sessions` (create, get, list, fork, flush, checkpoint),
// the typed event vocabulary, and the pure pieces persistence builds on (format checks, repair).
import { randomUUID } from 'node:crypto'
import type {} from '@dsh/composition'
import { type Context, eventsOf, HarnessError, Service } from '@dsh/kernel'
import {
  type AppendOptions,
  BUILTIN_EVENT_TYPES,
  SESSION_FORMAT_VERSION,
  type SessionEvent,
  type SessionHeader,
} from './events.js'
import { checkHeader, foldMessages, type Vocabulary } from './log.js'
import { Session } from './session.js'

export type {
  AnySessionEvent,
  AppendOptions,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
  SessionHeader,
  SurfaceEvent,
  SurfaceOp,
  TurnEndReason,
  TypedSessionEvent,
  UnknownSessionEvent,
} from './events.js'
export {
  BUILTIN_EVENT_TYPES,
  eventData,
  isEvent,
  isSurfaceEvent,
  SESSION_FORMAT_VERSION,
  SURFACE_TYPES,
  TURN_END_REASONS,
} from './events.js'
export { cloneJson, JsonFailure } from './json.js'
export type { OpenTail, PendingCall, Vocabulary } from './log.js'
export { checkHeader, foldMessages, SessionLog } from './log.js'
export type { RepairCode, RepairEvent } from './repair.js'
export { repairEvents } from './repair.js'
export type { RequestRecord } from './request.js'
export { contentHash } from './request.js'
export type { CommitHook } from './session.js'
export { Session } from './session.js'
export {
  contentText,
  type LoggedRequest,
  loggedRequests,
  type SessionStep,
  type StepCall,
  type StepEvent,
  sessionSteps,
} from './steps.js'
export type { ModelUsage, SessionUsage } from './usage.js'
export { sessionUsage, usageCostText } from './usage.js'

/** The three semantic boundaries a checkpoint guards. */
export type CheckpointBoundary = 'model-dispatch' | 'tool-body' | 'pre-step' | 'turn-end'

export interface CheckpointRequest {
  session: Session
  boundary: CheckpointBoundary
  /** What is about to happen (tool name, call id...), for error messages. */
  detail?: string
  /** `tool-body`: the tool declares no side effects (a policy may skip the barrier). */
  readOnly?: boolean
}

/** How far a flush goes: `sync: false` only hands the events to the OS (they survive the process being killed, not a power loss). */
export interface FlushOptions {
  /** Default true: written and synced (fsync / synchronous commit). */
  sync?: boolean
}

/** Makes sessions durable; registered by a persistence coordinator. */
export type FlushParticipant = (session?: Session, options?: FlushOptions) => Promise<void>

declare module 'cordis' {
  interface Context {
    sessions: SessionService
  }
  interface Events {
    /** After each commit. Listeners run in order; a throwing one is logged and never un-commits. */
    'session/event'(session: Session, event: SessionEvent): void | Promise<void>
    /** A new session (created or forked) became live; seeded events are already in its log. */
    'session/created'(session: Session): void | Promise<void>
    /** A live session was registered from durable storage (resume). */
    'session/restored'(session: Session): void | Promise<void>
    /** A session left the live set (closed, or its owner was disposed). */
    'session/closed'(session: Session): void | Promise<void>
    /** Serial: a listener that throws blocks the action the checkpoint guards. */
    'session/checkpoint'(request: CheckpointRequest): void | Promise<void>
  }
}

export interface CreateOptions {
  id?: string
  cwd?: string
  /** Milliseconds; defaults to now. */
  createdAt?: number
}

export interface SessionsConfig {
  /** Default cwd recorded in new headers; defaults to the launcher's cwd, then the process cwd. */
  cwd?: string
}

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/** Checks a session id is safe as a file name. Throws SESSION_ID_INVALID. */
export function checkSessionId(id: string): string {
  if (!ID.test(id) || id.includes('..')) {
    throw new HarnessError(
      'SESSION_ID_INVALID',
      `session id "${id}" must be 1-128 characters of letters, digits, ".", "_" or "-"`,
      { id },
    )
  }
  return id
}

type Notification = 'session/event' | 'session/created' | 'session/restored' | 'session/closed'

interface State {
  live: Map<string, Session>
  /** Disposes the owner effect that keeps a live session registered. */
  owners: Map<Session, () => unknown>
  defined: Map<string, number>
  participants: Set<FlushParticipant>
  /** `watch` listeners, replaced (never changed in place) on each registration and removal. */
  watchers: readonly SessionEventListener[]
}

/** A `session/event` listener called directly (see `SessionService.watch`). */
export type SessionEventListener = (session: Session, event: SessionEvent) => void | Promise<void>

/**
 * `ctx.sessions`: the live sessions of this process. Sessions created through a plugin's context
 * belong to it: disposing that plugin closes them (`session/closed`).
 */
export class SessionService extends Service {
  static readonly provide = 'sessions'
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly state: State = {
    live: new Map(),
    owners: new Map(),
    defined: new Map(),
    participants: new Set(),
    watchers: [],
  }
  readonly vocabulary: Vocabulary
  readonly home: Context
  readonly config: SessionsConfig
  /** Hot-path closures made in the constructor, so appends never go through Cordis's context proxies. */
  readonly dispatch: (name: Notification, ...args: unknown[]) => void
  readonly onCommit: (session: Session, event: SessionEvent) => void
  /** The event bus without the context proxy (decision 351). */
  readonly bus: Context['events']

  constructor(ctx: Context, config: SessionsConfig = {}) {
    super(ctx, 'sessions')
    this.home = ctx
    this.bus = eventsOf(ctx)
    this.config = config ?? {}
    const builtin = new Set(BUILTIN_EVENT_TYPES)
    const defined = this.state.defined
    this.vocabulary = { has: (type) => builtin.has(type) || defined.has(type) }
    const events = ctx.events as unknown as { parallel(name: string, ...args: unknown[]): Promise<void> }
    const logger = ctx.logger('sessions')
    this.dispatch = (name, ...args) => {
      events.parallel(name, ...args).catch((error: unknown) => {
        const errors = error instanceof AggregateError ? error.errors : [error]
        for (const item of errors) logger.warn(`a ${name} listener failed:`, item)
      })
    }
    const state = this.state
    const hooks = ctx.events._hooks
    const failed = (error: unknown) => logger.warn('a session/event listener failed:', error)
    this.onCommit = (session, event) => {
      if (state.live.get(session.id) !== session) return
      for (const watcher of state.watchers) {
        try {
          const result = watcher(session, event)
          if (result instanceof Promise) result.catch(failed)
        } catch (error) {
          failed(error)
        }
      }
      if (hooks['session/event']?.length) this.dispatch('session/event', session, event)
    }
    // Optional: when an invariants registry is loaded, it can check every live projection.
    ctx.inject(['invariants'], (inner) => {
      inner.invariants.register('@dsh/session', 'surface-projection', () => {
        const broken: string[] = []
        for (const session of this.state.live.values()) {
          const derived = JSON.stringify(session.deriveMessages())
          if (derived !== JSON.stringify(foldMessages(session.events))) {
            broken.push(`session ${session.id}: deriveMessages() differs from a fold of its log`)
          }
        }
        return broken
      })
    })
  }

  /** Creates a new live session with a fresh header. Throws SESSION_EXISTS for a live id. */
  create(options: CreateOptions = {}): Session {
    const header: SessionHeader = {
      type: 'session',
      version: SESSION_FORMAT_VERSION,
      id: checkSessionId(options.id ?? randomUUID()),
      createdAt: options.createdAt ?? Date.now(),
      cwd: options.cwd ?? this.config.cwd ?? this.launcherCwd() ?? process.cwd(),
    }
    const session = this.instantiate(header)
    this.register(this.ctx, session, 'session/created')
    return session
  }

  /**
   * Registers a session built from durable facts (see `build`) as live, owned by the caller; emits
   * `session/restored`. Used by persistence coordinators; most callers want
   * `ctx.sessionPersistence.resume(id)`. Throws SESSION_EXISTS when the id is already live.
   */
  restore(session: Session): Session {
    this.register(this.ctx, session, 'session/restored')
    return session
  }

  /**
   * Validates durable facts (a header and the parsed event records of its file) into a detached
   * session: not live, so its appends notify nobody until `restore` registers it. Throws
   * SESSION_CORRUPT or SESSION_FORMAT_UNSUPPORTED naming `location`.
   */
  build(header: unknown, records: Iterable<unknown>, location?: string, expectedId?: string): Session {
    const checked = checkHeader(header, location, expectedId)
    const session = this.instantiate(checked)
    session.location = location
    for (const record of records) session.load(record, location)
    return session
  }

  /** The cwd the launcher row recorded, when there is one. */
  launcherCwd(): string | undefined {
    return this.home.get('launcher')?.config.cwd
  }

  /** The live session with this id. */
  get(id: string): Session | undefined {
    return this.state.live.get(id)
  }

  /** The live sessions, in creation order. */
  list(): Session[] {
    return [...this.state.live.values()]
  }

  /**
   * Forks `source` at `boundary` (an inclusive event seq; default: its last event) into a new live
   * session. The prefix must be closed: no open turn or step and no call without a result
   * (SESSION_FORK_OPEN_PREFIX otherwise). The child's header records `parentSession` and
   * `seedLength`; its first new event is `session/end-seed`. `options.cwd` gives the child another
   * workspace (a what-if run in a scratch copy); by default it keeps the parent's.
   */
  fork(source: Session | string, boundary?: number, childId?: string, options: { cwd?: string } = {}): Session {
    const parent = typeof source === 'string' ? this.state.live.get(source) : source
    if (!parent) throw new HarnessError('SESSION_NOT_FOUND', `no live session "${String(source)}"`, { id: source })
    const last = boundary ?? parent.length - 1
    if (!Number.isInteger(last) || last < -1 || last >= parent.length) {
      throw new HarnessError(
        'SESSION_FORK_BOUNDARY',
        `fork boundary ${last} is outside session ${parent.id} (events 0..${parent.length - 1})`,
        { id: parent.id, boundary: last, length: parent.length },
      )
    }
    const seedLength = last + 1
    const header: SessionHeader = {
      type: 'session',
      version: SESSION_FORMAT_VERSION,
      id: checkSessionId(childId ?? randomUUID()),
      createdAt: Date.now(),
      cwd: options.cwd ?? parent.header.cwd,
      parentSession: parent.id,
      seedLength,
    }
    const probe = this.instantiate(header)
    for (const event of parent.events.slice(0, seedLength)) probe.load(structuredClone(event))
    if (!probe.isClosed()) {
      const tail = probe.openTail()
      throw new HarnessError(
        'SESSION_FORK_OPEN_PREFIX',
        `cannot fork session ${parent.id} at event ${last}: the prefix ends inside an open turn, step or tool call; fork at a closed boundary`,
        { id: parent.id, boundary: last, openTurn: tail.turn ?? null, openStep: tail.step ?? null },
      )
    }
    const child = this.instantiate(header)
    for (const event of parent.events.slice(0, seedLength)) child.load(structuredClone(event))
    this.register(this.ctx, child, 'session/created')
    child.append('session/end-seed', { parentSession: parent.id, seedLength })
    return child
  }

  /**
   * The durability barrier: resolves true once every persistence participant has written and synced
   * `session` (or every live session), false when no participant is registered (nothing is durable).
   * Rejects with the participant's error when a write failed; the failed batch is kept for a retry.
   * With `{ sync: false }` the events are written but not synced (a group commit: the next synced
   * flush makes them durable together with what follows).
   */
  async flush(session?: Session, options?: FlushOptions): Promise<boolean> {
    const participants = [...this.state.participants]
    if (participants.length === 0) return false
    await Promise.all(participants.map((flush) => flush(session, options)))
    return true
  }

  /**
   * Runs the checkpoint policy for `boundary` (the `session/checkpoint` serial event). Resolves when
   * the action may proceed; rejects (typically SESSION_CHECKPOINT_FAILED) when it must not.
   */
  async checkpoint(
    session: Session,
    boundary: CheckpointBoundary,
    detail?: string,
    options: { readOnly?: boolean } = {},
  ): Promise<void> {
    await this.bus.serial(
      'session/checkpoint',
      options.readOnly ? { session, boundary, detail, readOnly: true } : { session, boundary, detail },
    )
  }

  /**
   * `ctx.on('session/event', listener)` for listeners on the per-event path: called directly after each
   * commit, in registration order and before the Cordis listeners of the event, without Cordis's
   * per-call tracing (decision 352). Registered for the caller's lifetime; a throwing or rejecting
   * listener is logged, as on the event.
   */
  watch(listener: SessionEventListener): () => void {
    const state = this.state
    return this.ctx.effect(() => {
      state.watchers = [...state.watchers, listener]
      return () => {
        state.watchers = state.watchers.filter((item) => item !== listener)
      }
    }, 'sessions.watch')
  }

  /** Removes a live session and emits `session/closed` (persistence flushes and releases its lease). */
  close(session: Session | string): void {
    const id = typeof session === 'string' ? session : session.id
    const live = this.state.live.get(id)
    if (!live || (typeof session !== 'string' && live !== session)) return
    this.state.live.delete(id)
    const release = this.state.owners.get(live)
    this.state.owners.delete(live)
    release?.()
    this.notify('session/closed', live)
  }

  /**
   * Declares extension event types so readers of this process accept them on cold resume, for the
   * caller's lifetime. Pair it with a `SessionEventMap` augmentation for the data type.
   */
  defineEvent(...types: string[]): () => void {
    return this.ctx.effect(
      () => {
        for (const type of types) this.state.defined.set(type, (this.state.defined.get(type) ?? 0) + 1)
        return () => {
          for (const type of types) {
            const count = (this.state.defined.get(type) ?? 1) - 1
            if (count === 0) this.state.defined.delete(type)
            else this.state.defined.set(type, count)
          }
        }
      },
      `sessions.defineEvent(${types.join(',')})`,
    )
  }

  /** Registers a durability participant for the caller's lifetime (what `flush` waits for). */
  addFlushParticipant(participant: FlushParticipant): () => void {
    return this.ctx.effect(() => {
      this.state.participants.add(participant)
      return () => {
        this.state.participants.delete(participant)
      }
    }, 'sessions.addFlushParticipant')
  }

  instantiate(header: SessionHeader): Session {
    return new Session(header, this.vocabulary, this.onCommit)
  }

  register(owner: Context, session: Session, event: 'session/created' | 'session/restored'): void {
    if (this.state.live.has(session.id)) {
      throw new HarnessError('SESSION_EXISTS', `session ${session.id} is already live in this process`, {
        id: session.id,
      })
    }
    const release = owner.effect(() => {
      this.state.live.set(session.id, session)
      return () => this.close(session)
    }, `sessions.live(${session.id})`)
    this.state.owners.set(session, release)
    this.notify(event, session)
  }

  /**
   * Dispatches a notification so every listener runs in order even when one throws: `parallel` calls
   * each listener synchronously up to its first await and isolates failures, which are logged.
   */
  notify(name: Notification, ...args: unknown[]): void {
    this.dispatch(name, ...args)
  }
}

export type { AppendOptions as SessionAppendOptions }
export default SessionService
