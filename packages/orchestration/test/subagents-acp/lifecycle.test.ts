// The ACP child's lifecycle with an in-process parent and a real `dsh acp` child process: cancelling
// the parent's turn cancels the child's ACP prompt (its own log ends the turn aborted) and the child
// process ends; a kept child's process is killed when its parent agent is disposed; what an ACP agent
// cannot do (narrow its tools) is refused before any process starts.
import { join } from 'node:path'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import SubagentsService from '@dsh/orchestration/subagents'
import subagentTools from '@dsh/orchestration/subagents/tools'
import { completionResponse } from '@dsh/test-support'
import { calls, dataOf, startInProcess, text, until } from '@dsh/test-support/in-process'
import { afterAll, beforeAll, expect, it } from 'vitest'
import acpSubagents from '../../src/subagents-acp/index.js'
import { cliPath, createWorld, isChild, of, processesMentioning, type World } from './support.js'

let world: World
/** The child model's next answer: hang (until the request is aborted) or a text. */
let childAnswer: 'hang' | 'text' = 'hang'

beforeAll(async () => {
  world = await createWorld((request) => {
    if (!isChild(request)) return completionResponse({ text: 'unexpected parent request' })
    return childAnswer === 'hang' ? { type: 'hang' } : completionResponse({ text: 'ready for more' })
  })
})
afterAll(() => world.close())

async function boot(script: ScriptedResponse[]) {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(world.env())) if (value !== undefined) env[name] = value
  const { root } = await startInProcess({
    script,
    cwd: world.project,
    sessionsDir: join(world.home, 'sessions'),
    before: (root) => {
      root.plugin(SubagentsService, {})
      root.plugin(subagentTools)
      root.plugin(acpSubagents, {
        graceMs: 3000,
        agents: {
          dsh: { command: process.execPath, args: [cliPath, '--patch', world.childPatch, 'acp'], env },
        },
      })
    },
  })
  return root
}

it('cancelling the parent cancels the child’s prompt, and the child process ends', async () => {
  childAnswer = 'hang'
  const root = await boot([calls(['call-task', 'task', { prompt: 'wait for the model', provider: 'acp:dsh' }])])
  const parent = await root.agents.create()
  parent.followup('delegate and wait')
  await until(() => world.server.requests.some(isChild), 60_000)
  expect(processesMentioning(world.childPatch)).not.toEqual([])
  await parent.cancel('the person pressed stop')
  await parent.whenIdle()
  const [finished] = dataOf(parent.session, 'subagent/finished')
  expect(finished).toMatchObject({ outcome: 'cancelled' })
  // The cancel reached the child's own agent: its durable turn ended aborted.
  expect(of(world.log(finished?.childSession as string), 'turn/end')).toEqual([
    expect.objectContaining({ reason: 'aborted' }),
  ])
  expect(processesMentioning(world.childPatch)).toEqual([])
  await parent.dispose()
}, 90_000)

it('a kept child’s process is killed with its parent agent', async () => {
  childAnswer = 'text'
  const root = await boot([
    calls(['call-keep', 'task', { prompt: 'stay around', provider: 'acp:dsh', keep: true }]),
    text('kept it'),
  ])
  const parent = await root.agents.create()
  parent.followup('start a helper')
  await parent.whenIdle()
  expect(dataOf(parent.session, 'subagent/finished')).toEqual([
    expect.objectContaining({ outcome: 'completed', text: 'ready for more' }),
  ])
  expect(processesMentioning(world.childPatch)).not.toEqual([])
  await parent.dispose()
  expect(processesMentioning(world.childPatch)).toEqual([])
}, 90_000)

it('refuses to narrow an ACP agent’s tools, before any process starts', async () => {
  const root = await boot([
    calls(['call-narrow', 'task', { prompt: 'only read', provider: 'acp:dsh', tools: ['read'] }]),
    text('understood'),
  ])
  const parent = await root.agents.create()
  parent.followup('delegate with a narrow tool set')
  await parent.whenIdle()
  const [result] = dataOf(parent.session, 'tool/result')
  expect(result).toMatchObject({ code: 'SUBAGENT_UNSUPPORTED', message: { isError: true } })
  expect(dataOf(parent.session, 'subagent/started')).toEqual([])
  expect(processesMentioning(world.childPatch)).toEqual([])
  await parent.dispose()
})
