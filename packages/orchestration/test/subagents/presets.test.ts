// The `task` tool's `preset`: the child runs with the named preset (recorded in its own log), sees only
// that preset's tools, and never a tool its parent cannot use.

import { defineTool } from '@dsh/agent/tools'
import PresetsService from '@dsh/presets'
import { startInProcess } from '@dsh/test-support/in-process'
import { expect, it } from 'vitest'
import fork from '../../src/subagents/fork.js'
import { SubagentsService } from '../../src/subagents/index.js'
import spawn from '../../src/subagents/spawn.js'
import tools from '../../src/subagents/tools.js'
import { calls, createRoutedAdapter, dataOf, isChild, lastText, text } from './harness.js'

const CODING_TOOLS = ['read', 'ls', 'glob', 'grep', 'write', 'edit', 'bash']

async function boot(route: Parameters<typeof createRoutedAdapter>[0]) {
  const adapter = createRoutedAdapter(route)
  const { root } = await startInProcess({
    adapter,
    before: (root) => {
      root.plugin(PresetsService, { project: false, user: false })
      root.plugin(SubagentsService, {})
      root.plugin(spawn)
      root.plugin(fork)
      root.plugin(tools)
    },
    after: (root) => {
      for (const name of CODING_TOOLS) {
        root.tools.register(
          defineTool({ name, description: name, parameters: { type: 'object' }, execute: () => 'ok' }),
        )
      }
    },
  })
  return { root, adapter }
}

it('a subagent started with preset "ask" gets only read tools, and its log records the preset', async () => {
  const childTools: string[][] = []
  const { root } = await boot((dispatch) => {
    if (isChild(dispatch)) {
      childTools.push((dispatch.request.tools ?? []).map((tool) => tool.name))
      return lastText(dispatch) === 'explain the code' ? calls(['c1', 'write', {}]) : text('it reads files')
    }
    return lastText(dispatch) === 'go'
      ? calls(['p1', 'task', { prompt: 'explain the code', preset: 'ask' }])
      : text('done')
  })
  const children: Array<{ session: import('@dsh/session').Session }> = []
  root.on('agent/created', (agent) => {
    if (agent.id.startsWith('sub-')) children.push(agent)
  })
  const parent = await root.agents.create()
  expect(parent.preset).toBe('code')
  parent.followup('go')
  await parent.whenIdle()
  expect(childTools[0]).toEqual(['glob', 'grep', 'ls', 'read'])
  const [started] = dataOf(parent.session, 'subagent/started')
  expect(started?.preset).toBe('ask')
  const childSession = children[0]?.session
  expect(childSession?.id).toBe(started?.childSession)
  if (!childSession) throw new Error('no child agent was created')
  expect(dataOf(childSession, 'preset/selected')).toEqual([{ name: 'ask', by: 'request', origin: 'shipped' }])
  expect(dataOf(childSession, 'tool/result')[0]?.code).toBe('TOOL_NOT_ALLOWED')
  const [report] = dataOf(parent.session, 'subagent/finished')
  expect(report?.outcome).toBe('completed')
  await parent.dispose()
})

it('a child of a read-only parent stays read-only whatever preset it asks for', async () => {
  const childTools: string[][] = []
  const { root } = await boot((dispatch) => {
    if (isChild(dispatch)) {
      childTools.push((dispatch.request.tools ?? []).map((tool) => tool.name))
      return text('looked')
    }
    return lastText(dispatch) === 'go' ? calls(['p1', 'task', { prompt: 'change it', preset: 'code' }]) : text('done')
  })
  const parent = await root.agents.create({ preset: 'plan' })
  parent.followup('go')
  await parent.whenIdle()
  expect(childTools[0]).toEqual([
    'glob',
    'grep',
    'ls',
    'read',
    'subagent_close',
    'subagent_list',
    'subagent_send',
    'task',
  ])
  for (const mutating of ['write', 'edit', 'bash']) expect(childTools[0]).not.toContain(mutating)
  await parent.dispose()
})
