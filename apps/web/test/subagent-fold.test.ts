// The parent's `subagent/*` events on the card of the `task` call that started the child: the child
// session, a remote child's progress (one line per piece, one per tool call updated in place,
// bounded), and the run's outcome.

import type { EventEnvelope } from '@dsh/surfaces/wire'
import { expect, it } from 'vitest'
import { SessionProjection, type ToolNode } from '../src/projection'
import { MAX_PROGRESS, subagentOf } from '../src/subagent-fold'

let seq = 0
const ev = (type: string, data: unknown): EventEnvelope => ({ type, seq: seq++, time: seq, data })
const progress = (data: Record<string, unknown>) => ev('subagent/progress', { subagentId: 'sa1', run: 0, ...data })

it('folds a remote child onto its task card: child session, progress lines, outcome', () => {
  const p = new SessionProjection('parent')
  p.apply(ev('tool/call', { call: { id: 'call_t', name: 'task', arguments: { prompt: 'look' } } }))
  const node = p.toolNodes.get('call_t') as ToolNode
  p.apply(
    ev('subagent/started', {
      subagentId: 'sa1',
      provider: 'acp:dsh',
      mode: 'one-shot',
      childSession: 'child-1',
      depth: 1,
      callId: 'call_t',
    }),
  )
  const rev = node.rev
  p.apply(progress({ kind: 'thought', text: 'Where to look?' }))
  p.apply(progress({ kind: 'tool', toolCallId: 'c1', title: 'ls', status: 'pending' }))
  p.apply(progress({ kind: 'tool', toolCallId: 'c1', title: 'ls -la', status: 'completed' }))
  p.apply(progress({ kind: 'message', text: 'Three files.' }))
  p.apply(
    ev('subagent/finished', {
      subagentId: 'sa1',
      childSession: 'child-1',
      run: 0,
      outcome: 'completed',
      text: 'Three files.',
    }),
  )
  const view = subagentOf(node)
  expect(view).toMatchObject({
    childSession: 'child-1',
    provider: 'acp:dsh',
    outcome: 'completed',
    report: 'Three files.',
  })
  expect(view?.progress).toEqual([
    { kind: 'thought', text: 'Where to look?' },
    { kind: 'tool', text: 'ls -la', toolCallId: 'c1', status: 'completed' },
    { kind: 'message', text: 'Three files.' },
  ])
  expect(node.rev).toBeGreaterThan(rev)
  // Progress of a child no card started is ignored; a long child keeps the newest lines only.
  p.apply(ev('subagent/progress', { subagentId: 'other', run: 0, kind: 'message', text: 'x' }))
  for (let i = 0; i < MAX_PROGRESS + 10; i++) p.apply(progress({ kind: 'message', text: `piece ${i}` }))
  expect(view?.progress).toHaveLength(MAX_PROGRESS)
  expect(view?.progress.at(-1)?.text).toBe(`piece ${MAX_PROGRESS + 9}`)
})
