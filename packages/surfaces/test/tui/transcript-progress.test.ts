// A child in another process (an ACP agent) has no session here: what it did reaches the parent's log
// as `subagent/progress`, and the transcript draws it under the task line like an in-process child's.

import type { SubagentProgress } from '@dsh/orchestration/subagents'
import type { SessionEvent, SessionEventMap, SessionEventType } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import { createTheme } from '../../src/tui/theme.js'
import { Transcript } from '../../src/tui/transcript.js'

let seq = 0
const event = <T extends SessionEventType>(type: T, data: SessionEventMap[T]) =>
  ({ seq: seq++, time: 1_000 + seq, type, data }) as SessionEvent<T>
const progress = (data: SubagentProgress) => event('subagent/progress', { subagentId: 'sub-1', run: 0, ...data })
const started = event('subagent/started', {
  subagentId: 'sub-1',
  provider: 'acp:dsh',
  mode: 'one-shot',
  childSession: 'child-1',
  depth: 1,
  callId: 't1',
})
const taskCall = event('tool/call', {
  call: { type: 'tool-call', id: 't1', name: 'task', arguments: {} },
} as SessionEventMap['tool/call'])

describe('Transcript: a remote child’s progress', () => {
  it('nests its calls by state and its latest words under the task line', () => {
    const transcript = new Transcript(createTheme(true), (name) => ({ kind: 'generic', title: name }))
    for (const e of [taskCall, started]) transcript.add(e)
    transcript.add(progress({ kind: 'tool', toolCallId: 'c1', title: 'Read notes.md', status: 'pending' }))
    transcript.add(progress({ kind: 'thought', text: 'the notes\nfirst' }))
    transcript.add(progress({ kind: 'tool', toolCallId: 'c1', title: 'Read notes.md', status: 'completed' }))
    transcript.add(progress({ kind: 'tool', toolCallId: 'c2', title: 'Edit app.txt', status: 'in_progress' }))
    let rows = transcript.render(60).map((row) => row.trimEnd())
    const task = rows.findIndex((row) => row.startsWith('○ task'))
    expect(rows.slice(task + 1, task + 4)).toEqual(['  ● Read notes.md', '  ○ Edit app.txt', '  ∴ the notes first'])
    transcript.add(progress({ kind: 'tool', toolCallId: 'c2', title: 'Edit app.txt', status: 'failed' }))
    transcript.add(progress({ kind: 'message', text: 'could not edit it' }))
    rows = transcript.render(60).map((row) => row.trimEnd())
    expect(rows.slice(task + 1, task + 4)).toEqual(['  ● Read notes.md', '  ✗ Edit app.txt', '  » could not edit it'])
  })

  it('draws nothing for the progress of a child it does not show', () => {
    const transcript = new Transcript(createTheme(true), (name) => ({ kind: 'generic', title: name }))
    transcript.add(taskCall)
    const before = transcript.render(60)
    transcript.add(progress({ kind: 'message', text: 'of another child' }))
    expect(transcript.render(60)).toEqual(before)
  })
})
