// Where the page goes inside a session: the route of an event (a search hit), the node that shows an
// event, and the closed boundary a message forks at. Pure functions over the projection's nodes.
import type { ConversationNode } from './projection'

/** The route of session `sessionId` opened at event `seq`. */
export function eventRoute(sessionId: string, seq: number): string {
  return `#/s/${sessionId}/at/${seq}`
}

/** The event seq a route asks to show, if any. */
export function jumpTarget(route: string): number | undefined {
  const seq = /^#\/s\/[A-Za-z0-9_.-]+\/at\/(\d+)$/.exec(route)?.[1]
  return seq === undefined ? undefined : Number(seq)
}

/** The node showing event `seq`: the last node that starts at or before it (a tool result folds into its call). */
export function nodeIndexFor(nodes: readonly ConversationNode[], seq: number): number {
  for (let index = nodes.length - 1; index >= 0; index--)
    if ((nodes[index] as ConversationNode).seq <= seq) return index
  return -1
}

/** The seq to fork at for a message node: the turn end after an answer, the one before a user message. */
export function forkPoint(nodes: readonly ConversationNode[], node: ConversationNode): number | undefined {
  if (node.kind === 'user') {
    const before = nodes.findLast((other) => other.kind === 'turn-end' && other.seq < node.seq)
    return before ? before.seq : -1
  }
  return nodes.find((other) => other.kind === 'turn-end' && other.seq > node.seq)?.seq
}
