// The persistent inbox: a pure projection of `agent/inbox/spliced` events. Every change is a splice
// that is logged before memory changes, so replaying the log rebuilds the queues exactly.
import type { UserMessage } from '@dsh/llm'
import type { AnySessionEvent } from '@dsh/session'

/** `next-step`: joins the running turn at its next step. `next-turn`: starts (or waits for) a turn. */
export type InboxTarget = 'next-step' | 'next-turn'

export type InboxKind = 'followup' | 'steer' | 'inject' | 'send' | 'continuation'

export interface InboxItem {
  id: string
  kind: InboxKind
  message: UserMessage
  /** Whether queueing it wakes the driver. `inject` does not: it waits for another wake. */
  wake: boolean
}

/** The data of one `agent/inbox/spliced` event. */
export interface InboxSplice {
  target: InboxTarget
  start: number
  deleteCount: number
  items: InboxItem[]
  /** Why: `queued` (new input), `claimed` (a step took it), `edited` (a surface changed the queue). */
  reason: 'queued' | 'claimed' | 'edited'
}

export interface InboxState {
  'next-step': InboxItem[]
  'next-turn': InboxItem[]
}

export function emptyInbox(): InboxState {
  return { 'next-step': [], 'next-turn': [] }
}

/**
 * Checks a splice against the current queues; returns a problem description or undefined.
 * The caller refuses an invalid splice before logging it.
 */
export function checkSplice(state: InboxState, splice: InboxSplice): string | undefined {
  const queue = state[splice.target]
  if (!queue) return `unknown inbox target "${String(splice.target)}"`
  if (!Number.isInteger(splice.start) || splice.start < 0 || splice.start > queue.length) {
    return `splice start ${splice.start} is outside the ${splice.target} queue (length ${queue.length})`
  }
  if (
    !Number.isInteger(splice.deleteCount) ||
    splice.deleteCount < 0 ||
    splice.start + splice.deleteCount > queue.length
  ) {
    return `splice deletes ${splice.deleteCount} items from ${splice.start} of a queue of ${queue.length}`
  }
  return undefined
}

/** Applies a splice in place; returns the removed items. */
export function applySplice(state: InboxState, splice: InboxSplice): InboxItem[] {
  return state[splice.target].splice(splice.start, splice.deleteCount, ...splice.items)
}

/** Folds every `agent/inbox/spliced` event of a log into queues. */
export function foldInbox(events: Iterable<AnySessionEvent>): InboxState {
  const state = emptyInbox()
  for (const event of events) {
    if (event.type === 'agent/inbox/spliced') applySplice(state, event.data)
  }
  return state
}
