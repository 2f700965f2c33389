// Loop until done against a temp repo whose test passes once answer.txt says 42: the loop stops at the
// first passing check (the second child fixes it, told by the first check's output), stops at the
// iteration cap when nobody fixes it, and stops once the children's tokens reach the budget.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool } from '@dsh/agent/tools'
import { CommandsService } from '@dsh/interaction'
import type { RecordedRequest } from '@dsh/test-support'
import { completionResponse } from '@dsh/test-support'
import { dataOf, until } from '@dsh/test-support/in-process'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { createHarness, type Harness, hasToolResult, isChild, removeDir, taskOf } from './harness.js'

let repo: string
let harness: Harness
/** Whether a child that was told the check fails fixes the file. */
let fixes = true

function respond(request: RecordedRequest) {
  if (!isChild(request)) {
    return hasToolResult(request)
      ? completionResponse({ text: 'loop over' })
      : completionResponse({
          toolCalls: [
            {
              id: 'call-loop',
              name: 'loop',
              arguments: JSON.stringify({ task: 'make the test pass', until: 'sh test.sh', max_iterations: 5 }),
            },
          ],
        })
  }
  if (hasToolResult(request)) return completionResponse({ text: 'I wrote the answer' })
  if (fixes && taskOf(request).includes('answer.txt should say 42')) {
    return completionResponse({
      toolCalls: [{ id: 'call-w', name: 'write_answer', arguments: JSON.stringify({ text: '42' }) }],
    })
  }
  return completionResponse({ text: 'I looked around and changed nothing' })
}

beforeEach(async () => {
  fixes = true
  repo = mkdtempSync(join(tmpdir(), 'dsh-loop-'))
  writeFileSync(join(repo, 'answer.txt'), '41')
  writeFileSync(
    join(repo, 'test.sh'),
    'test "$(cat answer.txt)" = 42 || { echo "FAIL: answer.txt should say 42"; exit 1; }\n',
  )
  harness = await createHarness({
    cwd: repo,
    respond,
    after: async (root) => {
      await root.plugin(CommandsService)
      root.tools.register(
        defineTool<{ text: string }>({
          name: 'write_answer',
          description: 'writes answer.txt',
          parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
          execute: ({ text }) => {
            writeFileSync(join(repo, 'answer.txt'), text)
            return 'written'
          },
        }),
      )
    },
  })
})
afterEach(async () => {
  await harness.close()
  await removeDir(repo)
})

it('the loop tool stops on the first passing check, each attempt a fresh child fed the last check output', async () => {
  const parent = await harness.root.agents.create()
  parent.followup('fix the test')
  await parent.whenIdle()
  expect(readFileSync(join(repo, 'answer.txt'), 'utf8')).toBe('42')
  const iterations = dataOf(parent.session, 'loop/iteration')
  expect(iterations.map((item) => [item.iteration, item.passed, item.exitCode])).toEqual([
    [1, false, 1],
    [2, true, 0],
  ])
  expect(iterations[0]?.output).toContain('FAIL: answer.txt should say 42')
  expect(new Set(iterations.map((item) => item.childSession)).size).toBe(2)
  expect(dataOf(parent.session, 'loop/finished')).toMatchObject([{ outcome: 'passed', iterations: 2 }])
  // The second child started empty but for the task and the failing output (fresh context).
  const second = harness.server.requests.filter(isChild).find((request) => taskOf(request).includes('attempt 2'))
  expect(taskOf(second as RecordedRequest)).toContain('FAIL: answer.txt should say 42')
  const result = dataOf(parent.session, 'tool/result')[0]
  expect(result?.message.isError).toBe(false)
  await parent.dispose()
})

it('/loop stops at the iteration cap when the check never passes', async () => {
  fixes = false
  const parent = await harness.root.agents.create()
  const outcome = await harness.root.commands.dispatch('/loop "make the test pass" --until "sh test.sh" --max 3', {
    session: parent.session,
    agent: parent,
  })
  expect(outcome).toMatchObject({ ok: true })
  const [finished] = await until(() => {
    const found = dataOf(parent.session, 'loop/finished')
    return found.length > 0 && found
  })
  expect(finished).toMatchObject({ outcome: 'max-iterations', iterations: 3 })
  expect(dataOf(parent.session, 'loop/iteration').map((item) => item.passed)).toEqual([false, false, false])
  expect(harness.server.requests.filter(isChild)).toHaveLength(3)
  expect(readFileSync(join(repo, 'answer.txt'), 'utf8')).toBe('41')
  await parent.dispose()
})

it('stops once the children used the token budget', async () => {
  fixes = false
  const parent = await harness.root.agents.create()
  // Each mock answer reports 15 tokens: the second attempt reaches a budget of 20.
  const running = harness.root.workflows.startLoop(parent, {
    task: 'make the test pass',
    until: 'sh test.sh',
    tokenBudget: 20,
    maxIterations: 10,
  })
  const result = await running.done
  expect(result).toMatchObject({ outcome: 'budget', iterations: 2, tokens: 30 })
  expect(dataOf(parent.session, 'loop/finished')).toMatchObject([{ outcome: 'budget', iterations: 2, tokens: 30 }])
  await parent.dispose()
})
