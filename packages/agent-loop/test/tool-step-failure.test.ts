import { defineTool } from '@dsh/agent/tools'
import { expect, it } from 'vitest'
import { calls, createHarness, dataOf, text } from './harness.js'

it('a failed checkpoint before a tool body blocks it and closes every call with an honest synthetic result', async () => {
  const { root } = await createHarness([calls(['c1', 'touch', {}], ['c2', 'touch', {}]), text('never')])
  let ran = 0
  root.tools.register(
    defineTool({
      name: 'touch',
      description: 'changes the world',
      parameters: { type: 'object' },
      execute: () => {
        ran++
        return 'done'
      },
    }),
  )
  root.on('session/checkpoint', ({ boundary }) => {
    if (boundary === 'tool-body') throw new Error('disk full')
  })
  const agent = await root.agents.create()
  agent.followup('go')
  await agent.whenIdle()
  expect(ran).toBe(0)
  const results = dataOf(agent.session, 'tool/result')
  expect(results.map((r) => [r.message.toolCallId, r.code, r.synthetic])).toEqual([
    ['c1', 'TOOL_OUTCOME_UNKNOWN', true],
    ['c2', 'TOOL_NOT_STARTED', true],
  ])
  expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'error', message: 'disk full' }])
  expect(agent.session.isClosed()).toBe(true)
})
