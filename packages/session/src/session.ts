// A live session: the log plus post-commit notification. Append returns once the event is in the
// process's authoritative log; durability is the persistence seam's job (`ctx.sessions.flush`).
import type {
  AppendOptions,
  SessionEvent,
  SessionEventMap,
  SessionEventType,
  SessionHeader,
  UnknownSessionEvent,
} from './events.js'
import { SessionLog, type Vocabulary } from './log.js'

/** Called after each commit; must not throw (the service isolates listeners). */
export type CommitHook = (session: Session, event: SessionEvent) => void

export class Session extends SessionLog {
  readonly #onCommit: CommitHook | undefined
  /** Where this session is stored, once a persistence backend has named it (for error messages). */
  location: string | undefined

  constructor(header: SessionHeader, vocabulary: Vocabulary, onCommit?: CommitHook) {
    super(header, vocabulary)
    this.#onCommit = onCommit
  }

  get id(): string {
    return this.header.id
  }

  /**
   * Appends one event, then emits `session/event`. The event is committed before any listener runs,
   * and a failing listener never un-commits it. Throws SESSION_EVENT_INVALID (see SessionLog.append).
   */
  override append<T extends SessionEventType>(
    type: T,
    data: SessionEventMap[T],
    options?: AppendOptions,
  ): SessionEvent<T> {
    const event = super.append(type, data, options) as SessionEvent<T>
    // A generic envelope is one member of the union; TypeScript cannot see that for an open T.
    this.#onCommit?.(this, event as SessionEvent)
    return event
  }

  /**
   * Appends an event of a type this program does not declare (e.g. an `ignorable` extension event
   * relayed from elsewhere). Declared types should use `append`, which checks the payload's type.
   */
  appendUntyped(type: string, data: unknown, options?: AppendOptions): UnknownSessionEvent {
    const event = super.append(type, data, options) as unknown as UnknownSessionEvent
    this.#onCommit?.(this, event as unknown as SessionEvent)
    return event
  }
}
