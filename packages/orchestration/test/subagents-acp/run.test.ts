// A parent `dsh run` (the mock model) delegates with `task` provider `acp:dsh` to a real `dsh acp`
// child process (also the mock model), which reads and edits a file. The child's edit asks for
// permission: the request reaches the parent's approval (`--yes` allows it once), the file is fixed,
// the parent's durable log holds the child's progress and report, the child's durable log holds its
// own turn, and no child process is left.
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { collectExit, completionResponse, type RecordedRequest } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { cliPath, createWorld, isChild, of, processesMentioning, toolResults, type World } from './support.js'

let world: World
const file = () => join(world.project, 'app.txt')

function respond(request: RecordedRequest) {
  if (isChild(request)) {
    switch (toolResults(request)) {
      case 0:
        return completionResponse({
          toolCalls: [{ id: 'c-read', name: 'read', arguments: JSON.stringify({ path: file() }) }],
        })
      case 1:
        return completionResponse({
          toolCalls: [
            {
              id: 'c-edit',
              name: 'edit',
              arguments: JSON.stringify({ path: file(), old_string: 'status: bug', new_string: 'status: fixed' }),
            },
          ],
        })
      default:
        return completionResponse({ text: 'app.txt now says fixed' })
    }
  }
  return toolResults(request) === 0
    ? completionResponse({
        toolCalls: [
          {
            id: 'call-task',
            name: 'task',
            arguments: JSON.stringify({
              prompt: 'app.txt must say "status: fixed"; fix it',
              provider: 'acp:dsh',
              description: 'fix app.txt',
            }),
          },
        ],
      })
    : completionResponse({ text: 'delegated and done' })
}

beforeAll(async () => {
  world = await createWorld(respond, { ask: ['edit'] })
  writeFileSync(file(), 'status: bug\n')
})
afterAll(() => world.close())

it('a dsh acp child fixes a file; its permission goes through the parent approval; both logs tell it', async () => {
  const proc = spawn(
    process.execPath,
    [cliPath, '--patch', world.parentPatch, 'run', '--yes', 'fix app.txt with a subagent'],
    { cwd: world.project, env: world.env() },
  )
  const exit = await collectExit(proc)
  expect(exit.stderr).not.toMatch(/error/i)
  expect(exit).toMatchObject({ code: 0, stdout: 'delegated and done\n' })
  expect(readFileSync(file(), 'utf8')).toBe('status: fixed\n')

  // The parent's log: the child started through the ACP provider, its progress, the approval, its report.
  const parentId = world.sessions().find((id) => of(world.log(id), 'subagent/started').length > 0)
  if (!parentId) throw new Error('no session started a subagent')
  const parent = world.log(parentId)
  const [started] = of(parent, 'subagent/started')
  expect(started).toMatchObject({ provider: 'acp:dsh', description: 'fix app.txt', callId: 'call-task' })
  const childId = started?.childSession as string
  const progress = of(parent, 'subagent/progress')
  expect(progress.filter((item) => item.kind === 'tool').map((item) => [item.title, item.status])).toEqual([
    [expect.stringContaining('Read'), 'pending'],
    [expect.stringContaining('Read'), 'completed'],
    [expect.stringContaining('Edit'), 'pending'],
    [expect.stringContaining('Edit'), 'in_progress'],
    [expect.stringContaining('Edit'), 'completed'],
  ])
  expect(progress.filter((item) => item.kind === 'message').map((item) => item.text)).toEqual([
    'app.txt now says fixed',
  ])
  expect(of(parent, 'approval/asked')).toEqual([
    expect.objectContaining({ kind: 'subagent', toolCallId: 'call-task', sessionId: parentId }),
  ])
  expect(of(parent, 'approval/decided')).toEqual([
    expect.objectContaining({ decision: 'allowed-once', toolCallId: 'call-task' }),
  ])
  expect(of(parent, 'subagent/finished')).toEqual([
    expect.objectContaining({ outcome: 'completed', text: 'app.txt now says fixed', childSession: childId }),
  ])
  const [result] = of(parent, 'tool/result') as Array<{ message: { content: Array<{ text: string }> } }>
  expect(result?.message.content[0]?.text).toContain('app.txt now says fixed')

  // The child's own durable log (same DSH_HOME): its edit ran after its approval, its turn completed.
  const child = world.log(childId)
  expect(of(child, 'approval/decided')).toEqual([expect.objectContaining({ decision: 'allowed-once' })])
  const edit = of(child, 'tool/result').find(
    (data) => (data as { message: { toolCallId: string } }).message.toolCallId === 'c-edit',
  )
  expect(edit).toMatchObject({ message: { isError: false } })
  expect(of(child, 'turn/end')).toEqual([expect.objectContaining({ reason: 'completed' })])
  // Nothing of the child is left running.
  expect(processesMentioning(world.childPatch)).toEqual([])
}, 120_000)
