// Event subscriptions from a baseline seq. The baseline is cut in the same tick the subscriber is
// registered, and each delivery sends from the subscriber's cursor to the end of the log, so a client
// converges without gaps or duplicates even when the session object behind an id changes (a durable
// read first, a live session once something attaches it).
import type { Session, SessionHeader } from '@dsh/session'

/** An event as the live log holds it. */
export type LoggedEvent = Session['events'][number]

export type EventSink = (event: LoggedEvent, session: Session) => void

/** What `SessionHost.subscribe` returns. */
export interface SessionSubscription {
  readonly header: SessionHeader
  /** The seq of the first baseline event (the requested `since`, clamped to the log). */
  readonly since: number
  /** The events from `since` to the end of the log when the subscription was made. */
  readonly events: readonly LoggedEvent[]
  /** Stops delivery. Idempotent. */
  dispose(): void
}

interface Subscriber {
  sink: EventSink
  /** The seq of the next event this subscriber has not been given. */
  next: number
}

export class Subscriptions {
  private readonly bySession = new Map<string, Set<Subscriber>>()

  /** Cuts the baseline of `session` from `since` and registers `sink` for what follows, in one tick. */
  add(session: Session, since: number, sink: EventSink): SessionSubscription {
    const start = Math.max(0, Math.min(since, session.length))
    const subscriber: Subscriber = { sink, next: session.length }
    const id = session.id
    const set = this.bySession.get(id) ?? new Set<Subscriber>()
    this.bySession.set(id, set)
    set.add(subscriber)
    return {
      header: session.header,
      since: start,
      events: session.events.slice(start),
      dispose: () => {
        set.delete(subscriber)
        if (set.size === 0 && this.bySession.get(id) === set) this.bySession.delete(id)
      },
    }
  }

  /** Called on every committed event: each subscriber of the session gets what it has not had yet. */
  deliver(session: Session): void {
    const set = this.bySession.get(session.id)
    if (!set) return
    for (const subscriber of [...set]) {
      while (subscriber.next < session.length && set.has(subscriber)) {
        const event = session.events[subscriber.next] as LoggedEvent
        subscriber.next += 1
        subscriber.sink(event, session)
      }
    }
  }

  has(sessionId: string): boolean {
    return (this.bySession.get(sessionId)?.size ?? 0) > 0
  }

  clear(): void {
    this.bySession.clear()
  }
}
