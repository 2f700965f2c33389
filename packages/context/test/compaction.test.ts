// Compaction by hand (`ctx.compaction.compact`, the `/compact` command), its refusal during a turn,
// boundary facts of a failed attempt, and cuts that never separate a tool call from its result.

import { defineTool } from '@dsh/agent/tools'
import type { AssistantMessage, ToolResultMessage, UserMessage } from '@dsh/llm'
import { createScriptedAdapter } from '@dsh/llm/scripted'
import { describe, expect, it } from 'vitest'
import { SUMMARY_PREFIX } from '../src/compaction.js'
import { safeCuts, surfaceNodes } from '../src/index.js'
import { createContextHarness, messageOf, textOf } from './harness.js'

const say = (text: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  finishReason: 'stop',
})
const call = (id: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'tool-call', id, name: 'note', arguments: {} }],
  finishReason: 'tool-calls',
})

async function setup(script: Parameters<typeof createScriptedAdapter>[0]) {
  const adapter = createScriptedAdapter(script)
  const root = await createContextHarness({ adapter, pruning: false, compaction: { auto: false } })
  root.tools.register(
    defineTool({ name: 'note', description: 'notes', parameters: { type: 'object' }, execute: () => 'noted' }),
  )
  return { root, adapter }
}

describe('compaction by hand', () => {
  it('/compact summarises the older turns into one cited node; the transcript keeps everything', async () => {
    const { root, adapter } = await setup([
      call('a'),
      say('first done'),
      say('second done'),
      say('third done'),
      say('The user asked for three things; all were done.'),
      say('continuing'),
    ])
    const agent = await root.agents.create()
    for (const text of ['one', 'two', 'three']) {
      agent.followup(text)
      await agent.whenIdle()
    }
    const session = agent.session
    const transcriptBefore = session.transcript().length
    const surfaceBefore = [...session.surface()]
    const { compaction } = root
    const result = await compaction.compact(session, { keepTokens: 10 })
    expect(result).toMatchObject({ ok: true, trigger: 'manual', start: 0 })
    if (!result.ok) throw new Error('unreachable')
    // The last turn's user message starts the kept tail: one safe cut before it.
    expect(result.sourceEventSeqs).toEqual(surfaceBefore.slice(0, result.end + 1))
    const summary = session.events[result.summarySeq]
    expect(summary?.sourceEventSeqs).toEqual(result.sourceEventSeqs)
    expect(textOf(messageOf(summary))).toBe(`${SUMMARY_PREFIX}\n\nThe user asked for three things; all were done.`)
    const types = session.events.slice(-3).map((e) => e.type)
    expect(types).toEqual(['compaction/start', 'user/message', 'compaction/end'])
    expect(session.transcript()).toHaveLength(transcriptBefore)
    // The summary request: the summariser prompt and the rendered range, not the agent's tools.
    const summaryCall = adapter.dispatches[4]
    expect(summaryCall?.request.system).toMatch(/^You compact the history/)
    expect(summaryCall?.request.tools).toBeUndefined()
    expect(textOf(summaryCall?.request.messages[0] as UserMessage)).toContain('first done')

    // The next request starts from the summary.
    agent.followup('four')
    await agent.whenIdle()
    const next = adapter.dispatches[5]?.request.messages ?? []
    expect(textOf(next[0] as UserMessage)).toContain('The user asked for three things')
    expect(textOf(next.at(-1) as UserMessage)).toBe('four')
    root.invariants.assert()
  })

  it('carries the latest dynamic context into the summary verbatim', async () => {
    const { root, adapter } = await setup([say('a'), say('b'), say('the summary'), say('c')])
    root.systemPrompt.register({ name: 'sandbox-now', kind: 'dynamic', render: () => 'sandbox: workspace-write' })
    const agent = await root.agents.create()
    for (const text of ['one', 'two']) {
      agent.followup(text)
      await agent.whenIdle()
    }
    const result = await root.compaction.compact(agent.session, { keepTokens: 1 })
    expect(result.ok).toBe(true)
    const summary = textOf(messageOf(agent.session.events.at(-2)))
    expect(summary).toBe(
      `${SUMMARY_PREFIX}\n\nthe summary\n\n[Current context, carried over verbatim]\nsandbox: workspace-write`,
    )
    // The summariser saw the context labelled as such.
    expect(textOf(adapter.dispatches[2]?.request.messages[0] as UserMessage)).toContain('### context [event')
    agent.followup('three')
    await agent.whenIdle()
    const next = adapter.dispatches[3]?.request.messages ?? []
    expect(next.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
  })

  it('reports a session with nothing to summarise as COMPACTION_NO_RANGE, without boundary facts', async () => {
    const { root } = await setup([say('hi')])
    const agent = await root.agents.create()
    agent.followup('one')
    await agent.whenIdle()
    const length = agent.session.length
    expect(await root.compaction.compact(agent.session)).toMatchObject({ ok: false, code: 'COMPACTION_NO_RANGE' })
    expect(agent.session.length).toBe(length)
  })

  it('refuses a manual compaction while a turn runs', async () => {
    const { root } = await setup([call('a'), say('done')])
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let entered!: () => void
    const inTool = new Promise<void>((resolve) => {
      entered = resolve
    })
    root.tools.register(
      defineTool({
        name: 'wait',
        description: 'waits',
        parameters: { type: 'object' },
        execute: async () => {
          entered()
          await gate
          return 'ok'
        },
      }),
    )
    const agent = await root.agents.create()
    root.llm.registerAdapter(
      'scripted-wait',
      createScriptedAdapter([
        {
          role: 'assistant',
          content: [{ type: 'tool-call', id: 'w', name: 'wait', arguments: {} }],
          finishReason: 'tool-calls',
        },
      ]),
    )
    agent.followup('go')
    await agent.whenIdle()
    const busy = await root.agents.create({ model: { provider: 'scripted-wait', model: 'scripted' } })
    busy.followup('wait')
    await inTool
    expect(await root.compaction.compact(busy.session)).toMatchObject({ ok: false, code: 'COMPACTION_TURN_OPEN' })
    release()
    await busy.cancel()
  })

  it('leaves boundary facts when the summary call fails, and the surface unchanged', async () => {
    const { root } = await setup([
      say('one done'),
      say('two done'),
      { error: { code: 'PROVIDER_UNAVAILABLE', message: 'overloaded' } },
    ])
    const agent = await root.agents.create()
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    const session = agent.session
    const surface = [...session.surface()]
    const result = await root.compaction.compact(session, { keepTokens: 1 })
    expect(result).toEqual({ ok: false, trigger: 'manual', code: 'COMPACTION_MODEL_FAILED', message: 'overloaded' })
    expect(session.events.slice(-2).map((e) => [e.type, e.data])).toEqual([
      ['compaction/start', expect.objectContaining({ trigger: 'manual', start: 0, end: 2, nodes: 3 })],
      [
        'compaction/end',
        {
          trigger: 'manual',
          ok: false,
          code: 'COMPACTION_MODEL_FAILED',
          message: 'overloaded',
          llmCode: 'PROVIDER_UNAVAILABLE',
        },
      ],
    ])
    expect(session.surface()).toEqual(surface)
  })

  it('a failed threshold compaction leaves boundary facts and waits cooldownSteps before trying again', async () => {
    let summaries = 0
    let steps = 0
    const adapter = createScriptedAdapter(
      Array.from({ length: 40 }, () => (dispatch: { request: { system?: string } }) => {
        if (dispatch.request.system?.startsWith('You compact the history')) {
          summaries++
          return summaries === 1
            ? { error: { code: 'PROVIDER_UNAVAILABLE' as const, message: 'overloaded' } }
            : say('summary of the notes')
        }
        steps++
        return steps <= 8 ? call(`n${steps}`) : say('done')
      }),
    )
    const root = await createContextHarness({
      adapter,
      meter: { contextWindow: 400 },
      pruning: false,
      compaction: { threshold: 0.5, keepRatio: 0.2, cooldownSteps: 3 },
    })
    root.tools.register(
      defineTool({
        name: 'note',
        description: 'notes',
        parameters: { type: 'object' },
        execute: () => 'n'.repeat(600),
      }),
    )
    const agent = await root.agents.create()
    agent.followup('take notes')
    await agent.whenIdle()
    const marks = agent.session.events
      .filter((e) => e.type === 'step/start' || e.type === 'compaction/end')
      .map((e) => (e.type === 'step/start' ? 'S' : e.data.ok ? 'ok' : 'failed'))
      .join(' ')
    expect(marks).toMatch(/failed( S){4} ok/)
    expect(marks.indexOf('failed')).toBeLessThan(marks.indexOf('ok'))
    const failed = agent.session.events.find((e) => e.type === 'compaction/end')
    expect(failed?.data).toMatchObject({ trigger: 'threshold', ok: false, code: 'COMPACTION_MODEL_FAILED' })
    expect(agent.session.events.at(-1)?.data).toEqual({ reason: 'completed' })
  })

  it('never cuts between a tool call and its result', async () => {
    const root = await createContextHarness({ adapter: createScriptedAdapter([]), pruning: false, compaction: false })
    const session = root.sessions.create()
    const append = { surfaceOp: { op: 'append' } } as const
    const tool = (id: string): ToolResultMessage => ({
      role: 'tool',
      toolCallId: id,
      toolName: 'note',
      content: [{ type: 'text', text: 'ok' }],
      isError: false,
    })
    session.append('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'go' }] } }, append)
    session.append(
      'assistant/message',
      {
        message: {
          role: 'assistant',
          content: [
            { type: 'tool-call', id: 'a', name: 'note', arguments: {} },
            { type: 'tool-call', id: 'b', name: 'note', arguments: {} },
          ],
          finishReason: 'tool-calls',
        },
      },
      append,
    )
    session.append('tool/result', { message: tool('a') }, append)
    session.append('tool/result', { message: tool('b') }, append)
    session.append('assistant/message', { message: say('done') }, append)
    session.append('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'more' }] } }, append)
    expect(safeCuts(surfaceNodes(session))).toEqual([1, 4, 5])
  })
})
