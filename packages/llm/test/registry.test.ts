import { Context, HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import LlmService, { assembleMessage, type LlmAdapter, type LlmDispatch, type StreamChunk } from '../src/index.js'

function textAdapter(name: string, text = name, seen: LlmDispatch[] = []): LlmAdapter {
  return {
    name,
    defaults: () => ({ model: `${name}-model`, maxTokens: 100 }),
    reasoningEfforts: () => ['none', 'low', 'high'],
    catalog: (provider) => ({ provider, defaultModel: `${name}-model`, models: [{ id: `${name}-model` }] }),
    async *stream(dispatch) {
      seen.push(dispatch)
      yield { type: 'start', provider: dispatch.call.provider, model: dispatch.call.model }
      yield { type: 'text-delta', text }
      yield { type: 'finish', reason: 'stop' }
    },
  }
}

async function setup() {
  const ctx = new Context()
  await ctx.plugin(LlmService, { provider: 'a' })
  return ctx
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of stream) out.push(chunk)
  return out
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return HarnessError.is(error) ? error.code : `not a HarnessError: ${error}`
  }
  return undefined
}

describe('the ctx.llm registry', () => {
  it('registers a batch all together, or nothing when any provider is taken', async () => {
    const ctx = await setup()
    ctx.llm.registerAdapter(['a', 'b'], textAdapter('first'))
    expect(codeOf(() => ctx.llm.registerAdapter(['c', 'b'], textAdapter('second')))).toBe('DUPLICATE_ADAPTER')
    expect(ctx.llm.providers()).toEqual(['a', 'b'])
    expect(codeOf(() => ctx.llm.registerAdapter(['d', 'd'], textAdapter('third')))).toBe('DUPLICATE_ADAPTER')
    expect(ctx.llm.providers()).toEqual(['a', 'b'])
    expect(codeOf(() => ctx.llm.registerAdapter([], textAdapter('x')))).toBe('INVALID_ADAPTER')
    expect(codeOf(() => ctx.llm.registerAdapter('e', {} as LlmAdapter))).toBe('INVALID_ADAPTER')
  })

  it('replaces the adapter of every route at once, and refuses replace after dispose', async () => {
    const ctx = await setup()
    const handle = ctx.llm.registerAdapter(['a', 'b'], textAdapter('old'))
    handle.replace(textAdapter('new'))
    for (const provider of ['a', 'b']) {
      const message = await assembleMessage(ctx.llm.stream({ provider }, { messages: [] }))
      expect(message.content).toEqual([{ type: 'text', text: 'new' }])
    }
    handle.dispose()
    handle.dispose()
    expect(handle.disposed).toBe(true)
    expect(ctx.llm.providers()).toEqual([])
    expect(codeOf(() => handle.replace(textAdapter('late')))).toBe('REGISTRATION_DISPOSED')
  })

  it('removes the routes when the registering plugin is disposed', async () => {
    const ctx = await setup()
    let handle: ReturnType<LlmService['registerAdapter']> | undefined
    const fiber = ctx.plugin({
      name: 'provider-x',
      inject: ['llm'],
      apply(ctx: Context) {
        handle = ctx.llm.registerAdapter('x', textAdapter('x'))
      },
    })
    await fiber
    expect(ctx.llm.providers()).toEqual(['x'])
    await fiber.dispose()
    expect(ctx.llm.providers()).toEqual([])
    expect(handle?.disposed).toBe(true)
    const chunks = await collect(ctx.llm.stream({ provider: 'x' }, { messages: [] }))
    expect(chunks).toEqual([
      { type: 'finish', reason: 'error', error: expect.objectContaining({ code: 'NO_ADAPTER' }) },
    ])
  })

  it('prepares a call once: resolved defaults, deep-frozen, dispatchable once', async () => {
    const ctx = await setup()
    const seen: LlmDispatch[] = []
    ctx.llm.registerAdapter('a', textAdapter('a', 'hi', seen))
    const prepared = ctx.llm.prepareCall({ temperature: 0.5 })
    expect(prepared.config).toEqual({ provider: 'a', model: 'a-model', temperature: 0.5, maxTokens: 100 })
    expect(Object.isFrozen(prepared)).toBe(true)
    expect(Object.isFrozen(prepared.config)).toBe(true)
    expect(() => {
      ;(prepared.config as { model: string }).model = 'other'
    }).toThrow(TypeError)
    await collect(ctx.llm.stream(prepared, { messages: [] }))
    expect(seen[0]?.call).toBe(prepared.config)
    expect(codeOf(() => ctx.llm.stream(prepared, { messages: [] }))).toBe('INVALID_PREPARED_CALL')
    const forged = { config: { ...prepared.config } }
    expect(codeOf(() => ctx.llm.stream(forged, { messages: [] }))).toBe('INVALID_PREPARED_CALL')
    expect(seen).toHaveLength(1)
  })

  it('resolves a config to what a call would use without preparing one', async () => {
    const ctx = await setup()
    ctx.llm.registerAdapter('a', textAdapter('a', 'hi'))
    expect(ctx.llm.resolveCall()).toEqual({ provider: 'a', model: 'a-model', maxTokens: 100 })
    expect(ctx.llm.resolveCall({ reasoningEffort: 'high' })).toEqual({
      provider: 'a',
      model: 'a-model',
      reasoningEffort: 'high',
      maxTokens: 100,
    })
    expect(codeOf(() => ctx.llm.resolveCall({ reasoningEffort: 'medium' }))).toBe('UNSUPPORTED_REASONING_EFFORT')
    // The same resolution as a prepared call's.
    expect(ctx.llm.prepareCall({ temperature: 0.2 }).config).toEqual(ctx.llm.resolveCall({ temperature: 0.2 }))
  })

  it('refuses an unsupported explicit reasoning effort before any I/O, but never an unknown model', async () => {
    const ctx = await setup()
    const seen: LlmDispatch[] = []
    ctx.llm.registerAdapter('a', textAdapter('a', 'hi', seen))
    expect(codeOf(() => ctx.llm.prepareCall({ reasoningEffort: 'medium' }))).toBe('UNSUPPORTED_REASONING_EFFORT')
    expect(codeOf(() => ctx.llm.prepareCall({ maxTokens: -1 }))).toBe('INVALID_CALL_CONFIG')
    const call = ctx.llm.prepareCall({ model: 'not-in-the-catalog', reasoningEffort: 'high' })
    const message = await assembleMessage(ctx.llm.stream(call, { messages: [] }))
    expect(message.finishReason).toBe('stop')
    expect(seen.map((d) => d.call.model)).toEqual(['not-in-the-catalog'])
    expect(ctx.llm.catalog()).toEqual([{ provider: 'a', defaultModel: 'a-model', models: [{ id: 'a-model' }] }])
  })

  it('will not dispatch a call prepared for an adapter that was replaced since', async () => {
    const ctx = await setup()
    const handle = ctx.llm.registerAdapter('a', textAdapter('old'))
    const prepared = ctx.llm.prepareCall()
    handle.replace(textAdapter('new'))
    const chunks = await collect(ctx.llm.stream(prepared, { messages: [] }))
    expect(chunks).toEqual([
      { type: 'finish', reason: 'error', error: expect.objectContaining({ code: 'NO_ADAPTER' }) },
    ])
  })
})

describe('ctx.llm.stream failure lanes', () => {
  it('turns a missing adapter, a throwing adapter and an unfinished stream into terminal chunks', async () => {
    const ctx = await setup()
    const missing = await collect(ctx.llm.stream({ provider: 'nobody' }, { messages: [] }))
    expect(missing).toHaveLength(1)
    expect(missing[0]).toMatchObject({ type: 'finish', reason: 'error', error: { code: 'NO_ADAPTER' } })

    ctx.llm.registerAdapter('sync-throw', {
      name: 'sync-throw',
      stream() {
        throw new Error('boom at start')
      },
    })
    ctx.llm.registerAdapter('async-throw', {
      name: 'async-throw',
      async *stream() {
        yield { type: 'text-delta', text: 'partial' }
        throw new Error('boom mid-stream')
      },
    })
    ctx.llm.registerAdapter('no-finish', {
      name: 'no-finish',
      async *stream() {
        yield { type: 'text-delta', text: 'partial' }
      },
    })
    const a = await collect(ctx.llm.stream({ provider: 'sync-throw' }, { messages: [] }))
    expect(a).toEqual([{ type: 'finish', reason: 'error', error: expect.objectContaining({ code: 'UNKNOWN' }) }])
    const b = await assembleMessage(ctx.llm.stream({ provider: 'async-throw' }, { messages: [] }))
    expect(b).toMatchObject({ finishReason: 'error', content: [{ type: 'text', text: 'partial' }] })
    expect(b.error?.message).toContain('boom mid-stream')
    const c = await collect(ctx.llm.stream({ provider: 'no-finish' }, { messages: [] }))
    expect(c.at(-1)).toMatchObject({ type: 'finish', reason: 'error', error: { code: 'MALFORMED_RESPONSE' } })
  })

  it('passes every call through the llm/stream waterfall; middleware bugs still throw', async () => {
    const ctx = await setup()
    ctx.llm.registerAdapter('a', textAdapter('a', 'from adapter'))
    const dispose = ctx.on('llm/stream', (dispatch, next) => {
      if (dispatch.call.model === 'short') {
        return (async function* () {
          yield { type: 'text-delta', text: 'from middleware' } satisfies StreamChunk
          yield { type: 'finish', reason: 'stop' } satisfies StreamChunk
        })()
      }
      return next()
    })
    const short = await assembleMessage(ctx.llm.stream({ model: 'short' }, { messages: [] }))
    expect(short.content).toEqual([{ type: 'text', text: 'from middleware' }])
    const normal = await assembleMessage(ctx.llm.stream({}, { messages: [] }))
    expect(normal.content).toEqual([{ type: 'text', text: 'from adapter' }])
    dispose()
    ctx.on('llm/stream', () => {
      throw new Error('middleware bug')
    })
    expect(() => ctx.llm.stream({}, { messages: [] })).toThrow('middleware bug')
  })

  it('ends with an aborted chunk when the signal is already aborted', async () => {
    const ctx = await setup()
    ctx.llm.registerAdapter('a', textAdapter('a'))
    const chunks = await collect(ctx.llm.stream({}, { messages: [], signal: AbortSignal.abort() }))
    expect(chunks).toEqual([{ type: 'finish', reason: 'aborted', error: expect.objectContaining({ code: 'ABORTED' }) }])
  })
})
