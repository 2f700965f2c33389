import type { Agent, PreStepDecision, RequestErrorDecision } from '@dsh/agent'
import { defineTool } from '@dsh/agent/tools'
import type { LlmAdapter } from '@dsh/llm'
import { describe, expect, it } from 'vitest'
import { calls, createHarness, dataOf, latch, text, types } from './harness.js'

const TURN_OF_TEXT = [
  'turn/start',
  'agent/inbox/spliced', // claimed
  'step/start',
  'user/message',
  'request/header',
  'request/context',
  'assistant/message',
  'step/end',
  'turn/end',
]

describe('the default agent loop', () => {
  it('runs a plain turn and logs every fact in order', async () => {
    const { root, adapter } = await createHarness([text('hello there')])
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(types(agent.session)).toEqual(['agent/inbox/spliced', ...TURN_OF_TEXT])
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'completed' }])
    expect(agent.session.deriveMessages()).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'hello there' }], finishReason: 'stop' },
    ])
    expect(adapter.dispatches[0]?.request.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }])
    expect(agent.session.isClosed()).toBe(true)
    root.invariants.assert()
  })

  it('runs tools over several steps and feeds results back in order', async () => {
    const { root, adapter } = await createHarness([
      calls(['c1', 'add', { a: 1, b: 2 }]),
      calls(['c2', 'add', { a: 3, b: 4 }]),
      text('7 and 3'),
    ])
    root.tools.register(
      defineTool<{ a: number; b: number }>({
        name: 'add',
        description: 'adds two numbers',
        parameters: {
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' } },
          required: ['a', 'b'],
        },
        execute: ({ a, b }) => String(a + b),
      }),
    )
    const agent = await root.agents.create()
    agent.followup('add things')
    await agent.whenIdle()
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'completed' }])
    const results = dataOf(agent.session, 'tool/result').map((d) => d.message)
    expect(results.map((r) => [r.toolCallId, r.content, r.isError])).toEqual([
      ['c1', [{ type: 'text', text: '3' }], false],
      ['c2', [{ type: 'text', text: '7' }], false],
    ])
    expect(types(agent.session).filter((t) => t.startsWith('step/'))).toEqual([
      'step/start',
      'step/end',
      'step/start',
      'step/end',
      'step/start',
      'step/end',
    ])
    expect(adapter.dispatches[2]?.request.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ])
    root.invariants.assert()
  })

  it('overlaps parallel-safe tools in time but commits their results in call order', async () => {
    const { root } = await createHarness([
      calls(['s', 'sleep', { ms: 60, name: 'slow' }], ['f', 'sleep', { ms: 1, name: 'fast' }]),
      text('done'),
    ])
    const spans: Record<string, [number, number]> = {}
    root.tools.register(
      defineTool<{ ms: number; name: string }>({
        name: 'sleep',
        description: 'waits',
        mode: 'parallel-safe',
        parameters: { type: 'object', properties: { ms: { type: 'number' }, name: { type: 'string' } } },
        execute: async ({ ms, name }) => {
          const start = performance.now()
          await new Promise((resolve) => setTimeout(resolve, ms))
          spans[name] = [start, performance.now()]
          return name
        },
      }),
    )
    const agent = await root.agents.create()
    agent.followup('go')
    await agent.whenIdle()
    const slow = spans.slow as [number, number]
    const fast = spans.fast as [number, number]
    expect(fast[0]).toBeLessThan(slow[1]) // fast started before slow ended: they overlapped
    expect(fast[1]).toBeLessThan(slow[1]) // and fast finished first
    const order = dataOf(agent.session, 'tool/result').map((d) => d.message.toolCallId)
    expect(order).toEqual(['s', 'f'])
  })

  it('lands a steer sent mid-step in the next step of the same turn', async () => {
    const started = latch()
    const release = latch()
    const { root, adapter } = await createHarness([calls(['c1', 'wait', {}]), text('saw the steer')])
    root.tools.register(
      defineTool({
        name: 'wait',
        description: 'waits for the test',
        parameters: { type: 'object' },
        execute: async () => {
          started.resolve()
          await release.promise
          return 'ok'
        },
      }),
    )
    const agent = await root.agents.create()
    agent.followup('start')
    await started.promise
    agent.steer('also do this')
    release.resolve()
    await agent.whenIdle()
    expect(dataOf(agent.session, 'turn/start')).toHaveLength(1)
    const second = adapter.dispatches[1]?.request.messages ?? []
    expect(second.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: 'also do this' }] })
    expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user'])
  })

  it('keeps injected context until something wakes the agent', async () => {
    const { root, adapter } = await createHarness([text('ok')])
    const agent = await root.agents.create()
    agent.inject('context: the build is red')
    await agent.whenIdle()
    expect(dataOf(agent.session, 'turn/start')).toHaveLength(0)
    expect(agent.inbox()['next-step']).toHaveLength(1)
    agent.followup('what now?')
    await agent.whenIdle()
    expect(adapter.dispatches[0]?.request.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual([
      'what now?',
      'context: the build is red',
    ])
  })

  it('queues a followup sent during a run as the next turn', async () => {
    const started = latch()
    const release = latch()
    const slowFirst: LlmAdapter = {
      name: 'slow',
      async *stream(dispatch) {
        const n = (dispatch.request.messages.length + 1) / 2
        if (n === 1) {
          started.resolve()
          await release.promise
        }
        yield { type: 'text-delta', text: `answer ${n}` }
        yield { type: 'finish', reason: 'stop' }
      },
    }
    const { root } = await createHarness([], { adapter: slowFirst })
    const agent = await root.agents.create()
    agent.followup('first')
    await started.promise
    agent.followup('second')
    expect(agent.inbox()['next-turn']).toHaveLength(1)
    release.resolve()
    await agent.whenIdle()
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'completed' }, { reason: 'completed' }])
    expect(agent.session.deriveMessages().map((m) => (m.content[0] as { text: string }).text)).toEqual([
      'first',
      'answer 1',
      'second',
      'answer 2',
    ])
  })

  it('lets a surface edit the queued next turn while the agent runs (logged splices)', async () => {
    const started = latch()
    const release = latch()
    const slowFirst: LlmAdapter = {
      name: 'slow',
      async *stream(dispatch) {
        if (dispatch.request.messages.length === 1) {
          started.resolve()
          await release.promise
        }
        yield { type: 'text-delta', text: 'ok' }
        yield { type: 'finish', reason: 'stop' }
      },
    }
    const { root } = await createHarness([], { adapter: slowFirst })
    const agent = await root.agents.create()
    agent.followup('first')
    await started.promise
    agent.followup('typo in this one')
    agent.followup('third')
    const removed = agent.spliceInbox('next-turn', 0, 1, 'second, fixed')
    expect(removed.map((item) => (item.message.content[0] as { text: string }).text)).toEqual(['typo in this one'])
    release.resolve()
    await agent.whenIdle()
    const users = dataOf(agent.session, 'user/message').map(
      (d) => d.message.content.find((b) => b.type === 'text')?.text,
    )
    expect(users).toEqual(['first', 'second, fixed', 'third'])
    // The queue is a projection of the log: folding the log again gives the same (empty) queues.
    const { foldInbox } = await import('@dsh/agent')
    expect(foldInbox(agent.session.events)).toEqual({ 'next-step': [], 'next-turn': [] })
  })

  it('runs input that arrives during a cancel after the cancelled turn, not as part of it', async () => {
    const streaming = latch()
    let calls = 0
    const adapter: LlmAdapter = {
      name: 'hang-once',
      async *stream(dispatch) {
        calls++
        if (calls === 1) {
          streaming.resolve()
          await new Promise((resolve) => dispatch.request.signal?.addEventListener('abort', resolve))
          yield { type: 'finish', reason: 'aborted', error: { code: 'ABORTED', message: 'aborted' } }
          return
        }
        yield { type: 'text-delta', text: 'second turn ran' }
        yield { type: 'finish', reason: 'stop' }
      },
    }
    const { root } = await createHarness([], { adapter })
    const agent = await root.agents.create()
    agent.followup('first')
    await streaming.promise
    const cancelled = agent.cancel()
    agent.followup('after the cancel')
    await cancelled
    await agent.whenIdle()
    expect(dataOf(agent.session, 'turn/end').map((d) => (d as { reason: string }).reason)).toEqual([
      'aborted',
      'completed',
    ])
    expect(calls).toBe(2)
  })

  it('cancels during streaming: the turn ends aborted and the log is closed', async () => {
    const streaming = latch()
    const hanging: LlmAdapter = {
      name: 'hanging',
      async *stream(dispatch) {
        yield { type: 'text-delta', text: 'partial' }
        streaming.resolve()
        await new Promise((resolve) => dispatch.request.signal?.addEventListener('abort', resolve))
        yield { type: 'finish', reason: 'aborted', error: { code: 'ABORTED', message: 'the request was aborted' } }
      },
    }
    const { root } = await createHarness([], { adapter: hanging })
    const agent = await root.agents.create()
    agent.followup('go')
    await streaming.promise
    await agent.cancel()
    expect(agent.phase).toBe('idle')
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'aborted', message: 'the request was aborted' }])
    expect(agent.session.isClosed()).toBe(true)
  })

  it('cancels during a tool body: the body sees the abort, its result is kept, the log is closed', async () => {
    const started = latch()
    const { root } = await createHarness([calls(['c1', 'block', {}], ['c2', 'block', {}]), text('never')])
    root.tools.register(
      defineTool({
        name: 'block',
        description: 'blocks until aborted',
        parameters: { type: 'object' },
        execute: async (_args, call) => {
          started.resolve()
          await new Promise((resolve) => call.signal.addEventListener('abort', resolve))
          return 'stopped early'
        },
      }),
    )
    const agent = await root.agents.create()
    agent.followup('go')
    await started.promise
    await agent.cancel()
    const results = dataOf(agent.session, 'tool/result')
    expect(results.map((r) => [r.message.toolCallId, r.code])).toEqual([
      ['c1', undefined],
      ['c2', 'ABORTED_BEFORE_DISPATCH'],
    ])
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'aborted' }])
    expect(agent.session.isClosed()).toBe(true)
  })

  it('closes a stepless turn when agent/pre-step rejects the first step', async () => {
    const { root, adapter } = await createHarness([text('unused')])
    root.on(
      'agent/pre-step',
      async (_input, _next): Promise<PreStepDecision> => ({ action: 'reject', reason: 'policy says no' }),
    )
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(types(agent.session)).toEqual(['agent/inbox/spliced', 'turn/start', 'agent/inbox/spliced', 'turn/end'])
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'blocked', message: 'policy says no' }])
    expect(adapter.dispatches).toHaveLength(0)
  })

  it('retries a failed request when an agent/request-error plugin says so', async () => {
    const { root, adapter } = await createHarness([
      { error: { code: 'RATE_LIMIT', message: 'slow down', status: 429 } },
      text('second time lucky'),
    ])
    const seen: string[] = []
    root.on('agent/request-error', async (failure, next): Promise<RequestErrorDecision> => {
      seen.push(failure.error.code)
      if (failure.error.code === 'RATE_LIMIT' && failure.attempt === 0) return { retry: true }
      return next()
    })
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(seen).toEqual(['RATE_LIMIT'])
    expect(adapter.dispatches).toHaveLength(2)
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'completed' }])
    expect(dataOf(agent.session, 'request/header').map((h) => h.reason)).toEqual([undefined, 'retry 1 (RATE_LIMIT)'])
    root.invariants.assert()
  })

  it('ends a turn with error when the model fails and nobody retries', async () => {
    const { root } = await createHarness([{ error: { code: 'AUTH', message: 'bad key', status: 401 } }])
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'error', message: 'bad key' }])
  })

  it('keeps a turn alive from agent/turn-stopping', async () => {
    const { root, adapter } = await createHarness([text('first answer'), text('second answer')])
    let kept = false
    root.on('agent/turn-stopping', () => {
      if (kept) return undefined
      kept = true
      return { continue: true, message: { role: 'user', content: [{ type: 'text', text: 'keep going' }] } }
    })
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(dataOf(agent.session, 'turn/start')).toHaveLength(1)
    expect(dataOf(agent.session, 'step/start')).toHaveLength(2)
    expect(adapter.dispatches[1]?.request.messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'keep going' }],
    })
  })

  it('makes max-tokens sticky for the turn', async () => {
    const { root } = await createHarness([
      { role: 'assistant', content: [{ type: 'text', text: 'cut' }], finishReason: 'max-tokens' },
    ])
    const agent = await root.agents.create()
    agent.followup('write a novel')
    await agent.whenIdle()
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'max-tokens' }])
  })

  it('disposes to quiescence: the running turn is cancelled, the agent unregistered', async () => {
    const started = latch()
    const { root } = await createHarness([calls(['c1', 'block', {}])])
    let bodyDone = false
    root.tools.register(
      defineTool({
        name: 'block',
        description: 'blocks until aborted',
        parameters: { type: 'object' },
        execute: async (_args, call) => {
          started.resolve()
          await new Promise((resolve) => call.signal.addEventListener('abort', resolve))
          bodyDone = true
          return 'stopped'
        },
      }),
    )
    const agent: Agent = await root.agents.create()
    agent.followup('go')
    await started.promise
    await agent.dispose()
    expect(bodyDone).toBe(true)
    expect(agent.disposed).toBe(true)
    expect(root.agents.get(agent.id)).toBeUndefined()
    expect(agent.session.isClosed()).toBe(true)
    expect(() => agent.followup('more')).toThrow(/disposed/)
  })
})
