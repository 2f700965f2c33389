import ApprovalService, { createStaticAnswerer } from '@dsh/agent/approval'
import { defineTool } from '@dsh/agent/tools'
import { describe, expect, it } from 'vitest'
import { calls, createHarness, dataOf, text, types } from './harness.js'

async function withApproval() {
  const harness = await createHarness([calls(['c1', 'danger', {}]), text('done')])
  await harness.root.plugin(ApprovalService)
  let ran = 0
  harness.root.tools.register(
    defineTool({
      name: 'danger',
      description: 'needs approval',
      parameters: { type: 'object' },
      execute: () => {
        ran++
        return 'did it'
      },
    }),
  )
  harness.root.on('tools/pre-execute', async (call, next) =>
    call.toolName === 'danger' ? { action: 'ask', summary: 'do the dangerous thing' } : next(),
  )
  return { ...harness, ran: () => ran }
}

describe('approval inside a turn', () => {
  it('logs approval/asked and approval/decided between the call and its result, and runs once when allowed', async () => {
    const { root, ran } = await withApproval()
    root.approval.answer(createStaticAnswerer('allowed-once'))
    const agent = await root.agents.create()
    agent.followup('go')
    await agent.whenIdle()
    expect(ran()).toBe(1)
    const slice = types(agent.session).filter((t) => t.startsWith('tool/') || t.startsWith('approval/'))
    expect(slice).toEqual(['tool/call', 'approval/asked', 'approval/decided', 'tool/result'])
    const decided = dataOf(agent.session, 'approval/decided')
    expect(decided.map(({ decision, toolCallId, by }) => ({ decision, toolCallId, by }))).toEqual([
      { decision: 'allowed-once', toolCallId: 'c1', by: 'answerer' },
    ])
  })

  it('fails closed without an answerer: the tool does not run and the model reads why', async () => {
    const { root, ran } = await withApproval()
    const agent = await root.agents.create()
    agent.followup('go')
    await agent.whenIdle()
    expect(ran()).toBe(0)
    const [result] = dataOf(agent.session, 'tool/result')
    expect(result?.message.isError).toBe(true)
    expect(dataOf(agent.session, 'approval/decided').map((d) => d.decision)).toEqual(['unavailable'])
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'completed' }])
  })
})
