// A `task` delegated to another ACP agent (here a real `dsh acp` child process): the chat draws the
// child's calls and its words under the task line from the `subagent/progress` events of its own log.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  id,
  name,
  arguments: JSON.stringify(args),
})

it("draws an ACP child's calls and its answer under the task line, as its progress is logged", async () => {
  writeFileSync(join(f.work, 'notes.md'), '# notes\n')
  const patch = join(f.home, 'acp-agents.yml')
  writeFileSync(
    patch,
    [
      '- id: subagents-acp',
      '  use: "@dsh/subagents-acp"',
      '  config:',
      '    agents:',
      '      dsh:',
      '        description: another dsh',
      '        args: ["acp"]',
      '        inheritEnv: true',
      '',
    ].join('\n'),
  )
  // In request order: the parent delegates, the child reads and answers, the parent ends its turn.
  f.server.enqueue(
    completionResponse({
      toolCalls: [call('t1', 'task', { prompt: 'read the notes', provider: 'acp:dsh', description: 'reader' })],
    }),
    completionResponse({ toolCalls: [call('r1', 'read', { path: 'notes.md' })] }),
    completionResponse({ text: 'The notes say notes.' }),
    completionResponse({ text: 'Delegated and done.' }),
  )
  const screen = f.open(['--patch', patch, 'delegate', 'it'])
  await screen.waitFor('Delegated and done.', 60_000)
  const rows = screen.all().split('\n')
  const task = rows.findIndex((row) => /^● .*reader|^● .*read the notes/.test(row))
  expect(task).toBeGreaterThanOrEqual(0)
  expect(rows[task + 1]).toMatch(/^ {2}● .*notes\.md/)
  expect(rows[task + 2]).toMatch(/^ {2}» The notes say notes\./)
  screen.type('\x04')
  expect(await screen.exited).toBe(0)

  // What was drawn is what the parent's log holds.
  const sessionId = /dsh --resume ([0-9a-f-]{36})/.exec(screen.raw())?.[1] as string
  const progress = f.log(sessionId).flatMap((e) => (e.type === 'subagent/progress' ? [e.data] : []))
  expect(progress.flatMap((p) => (p.kind === 'tool' ? [p.status] : []))).toContain('completed')
  expect(progress.flatMap((p) => (p.kind === 'message' ? [p.text] : []))).toEqual(['The notes say notes.'])
})
