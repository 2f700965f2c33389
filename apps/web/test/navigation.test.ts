// Where a search hit and "fork from here" land: the node that shows an event, and the closed turn
// boundary a message forks at (the session layer refuses a prefix that ends inside a turn).
import { describe, expect, it } from 'vitest'
import { eventRoute, forkPoint, jumpTarget, nodeIndexFor } from '../src/navigation'
import type { ConversationNode } from '../src/projection'

const node = (kind: string, seq: number): ConversationNode => ({ kind, seq, key: `${kind}${seq}`, rev: 0 })
// Two turns: user 1, a tool call at 3 (its result folds into the card), answer 6, end 8; user 10, answer 12, end 14.
const nodes = [
  node('user', 1),
  node('tool', 3),
  node('assistant', 6),
  node('turn-end', 8),
  node('user', 10),
  node('assistant', 12),
  node('turn-end', 14),
]

describe('page navigation', () => {
  it('reads the event a route opens, and only from a session route', () => {
    expect(jumpTarget(eventRoute('abc-1', 12))).toBe(12)
    expect(jumpTarget('#/s/abc-1')).toBeUndefined()
    expect(jumpTarget('#/settings')).toBeUndefined()
  })

  it('shows an event in the last node starting at or before it', () => {
    expect(nodeIndexFor(nodes, 6)).toBe(2)
    // seq 4 is the tool result: it is drawn in the call's card.
    expect(nodeIndexFor(nodes, 4)).toBe(1)
    expect(nodeIndexFor(nodes, 0)).toBe(-1)
  })

  it('forks an answer at the end of its turn and a message before its turn', () => {
    expect(forkPoint(nodes, nodes[2] as ConversationNode)).toBe(8)
    expect(forkPoint(nodes, nodes[5] as ConversationNode)).toBe(14)
    expect(forkPoint(nodes, nodes[4] as ConversationNode)).toBe(8)
    // Before the first message: an empty fork.
    expect(forkPoint(nodes, nodes[0] as ConversationNode)).toBe(-1)
    // An answer whose turn has not ended yet has no closed point.
    expect(forkPoint(nodes.slice(0, 3), nodes[2] as ConversationNode)).toBeUndefined()
  })
})
