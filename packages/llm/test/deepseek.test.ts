import { performance } from 'node:perf_hooks'
import {
  chunkEvent,
  completionResponse,
  completionSteps,
  deepseekUsage,
  errorResponse,
  startMockLlmServer,
} from '@dsh/test-support'
import { describe, expect, it } from 'vitest'
import deepseek from '../src/deepseek.js'
import { type AssistantMessage, assembleMessage, type LlmErrorCode, type Message } from '../src/index.js'
import { bootLlm, collect, KEY, tempDir } from './helpers.js'

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] })

async function setup(config: Record<string, unknown> = {}, env?: Record<string, string | undefined>) {
  const server = await startMockLlmServer()
  const dir = await tempDir()
  const { ctx, dispose } = await bootLlm(deepseek, { baseUrl: server.url, ...config }, { env, home: dir.path })
  return {
    server,
    ctx,
    async [Symbol.asyncDispose]() {
      await dispose()
      await server.close()
      await dir[Symbol.asyncDispose]()
    },
  }
}

describe('deepseek adapter over real HTTP', () => {
  it('streams plain text after keep-alives, with usage and cache fields', async () => {
    await using t = await setup()
    t.server.enqueue(
      completionResponse({
        keepAlives: 2,
        text: ['Hello', ' there.'],
        usage: deepseekUsage(12, 3, 0),
      }),
    )
    const chunks = await collect(t.ctx.llm.stream({}, { system: 'be brief', messages: [user('hi')] }))
    expect(chunks[0]).toEqual({ type: 'start', provider: 'deepseek', model: 'deepseek-v4-pro', requestId: 'req-0' })
    const message = await assembleMessage(chunks)
    expect(message).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'Hello there.' }],
      finishReason: 'stop',
      usage: { inputTokens: 12, outputTokens: 3, totalTokens: 15, cacheHitTokens: 0, cacheMissTokens: 12 },
      provider: 'deepseek',
      model: 'deepseek-v4-pro',
    } satisfies AssistantMessage)
    const [request] = t.server.requests
    expect(request?.path).toBe('/chat/completions')
    expect(request?.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(request?.headers['user-agent']).toBe('dsh')
    expect(request?.body).toEqual({
      model: 'deepseek-v4-pro',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      thinking: { type: 'enabled' },
    })
  })

  it('streams reasoning then text', async () => {
    await using t = await setup()
    t.server.enqueue(
      completionResponse({
        reasoning: ['9.11 < 9.8 ', 'since 0.11 < 0.80.'],
        text: '9.8 is larger.',
        usage: deepseekUsage(20, 31, 0, 24),
      }),
    )
    const message = await assembleMessage(
      t.ctx.llm.stream({ reasoningEffort: 'max' }, { messages: [user('which is larger?')] }),
    )
    expect(message.content).toEqual([
      { type: 'reasoning', text: '9.11 < 9.8 since 0.11 < 0.80.' },
      { type: 'text', text: '9.8 is larger.' },
    ])
    expect(message.usage).toEqual({
      inputTokens: 20,
      outputTokens: 31,
      totalTokens: 51,
      cacheHitTokens: 0,
      cacheMissTokens: 20,
      reasoningTokens: 24,
    })
    expect(t.server.requests[0]?.body.reasoning_effort).toBe('max')
  })

  it('assembles parallel tool calls from fragmented arguments and sends the turn back whole', async () => {
    await using t = await setup()
    t.server.enqueue(
      completionResponse({
        reasoning: 'Need both files.',
        toolCalls: [
          { id: 'call_a1', name: 'read_file', arguments: ['', '{"path":', ' "a.ts"}'] },
          { id: 'call_b2', name: 'read_file', arguments: ['{"pa', 'th": "b.ts"}'] },
        ],
        usage: deepseekUsage(310, 60, 256, 9),
      }),
      completionResponse({ text: 'Both read.' }),
    )
    const tools = [{ name: 'read_file', description: 'Read a file', parameters: { type: 'object' } }]
    const first = await assembleMessage(t.ctx.llm.stream({}, { messages: [user('read a and b')], tools }))
    expect(first.finishReason).toBe('tool-calls')
    expect(first.content).toEqual([
      { type: 'reasoning', text: 'Need both files.' },
      { type: 'tool-call', id: 'call_a1', name: 'read_file', arguments: { path: 'a.ts' } },
      { type: 'tool-call', id: 'call_b2', name: 'read_file', arguments: { path: 'b.ts' } },
    ])
    expect(first.usage).toMatchObject({ cacheHitTokens: 256, cacheMissTokens: 54, reasoningTokens: 9 })

    const history: Message[] = [
      user('read a and b'),
      first,
      {
        role: 'tool',
        toolCallId: 'call_a1',
        toolName: 'read_file',
        content: [{ type: 'text', text: 'A' }],
        isError: false,
      },
      {
        role: 'tool',
        toolCallId: 'call_b2',
        toolName: 'read_file',
        content: [{ type: 'text', text: 'B' }],
        isError: false,
      },
    ]
    await assembleMessage(t.ctx.llm.stream({}, { messages: history, tools }))
    const second = t.server.requests[1]?.body
    expect(second.tools).toEqual([
      { type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: { type: 'object' } } },
    ])
    expect(second.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        reasoning_content: 'Need both files.',
        tool_calls: [
          { id: 'call_a1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
          { id: 'call_b2', type: 'function', function: { name: 'read_file', arguments: '{"path":"b.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a1', content: 'A' },
      { role: 'tool', tool_call_id: 'call_b2', content: 'B' },
    ])
  })

  it('keeps invalid tool-call JSON as a recorded error instead of crashing', async () => {
    await using t = await setup()
    t.server.enqueue(
      completionResponse({ toolCalls: [{ id: 'call_x', name: 'edit', arguments: ['{"path": "a.ts", ', '"text": '] }] }),
    )
    const message = await assembleMessage(t.ctx.llm.stream({}, { messages: [user('edit')] }))
    const [call] = message.content
    expect(call).toMatchObject({
      type: 'tool-call',
      id: 'call_x',
      arguments: {},
      rawArguments: '{"path": "a.ts", "text": ',
    })
    expect(call?.type === 'tool-call' && call.argumentsError).toMatch(/invalid JSON/)
  })

  const statuses: [number, LlmErrorCode][] = [
    [400, 'BAD_REQUEST'],
    [401, 'AUTH'],
    [402, 'INSUFFICIENT_BALANCE'],
    [422, 'BAD_REQUEST'],
    [429, 'RATE_LIMIT'],
    [500, 'PROVIDER_UNAVAILABLE'],
    [503, 'PROVIDER_UNAVAILABLE'],
  ]
  it.each(statuses)('maps HTTP %i to %s with status, request id and provider code', async (status, code) => {
    await using t = await setup()
    t.server.enqueue(errorResponse(status, `provider says ${status}`, { headers: { 'retry-after': '7' } }))
    const chunks = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(chunks).toEqual([
      {
        type: 'finish',
        reason: 'error',
        error: {
          code,
          message: expect.stringContaining(`HTTP ${status}: provider says ${status}`),
          status,
          retryAfterMs: 7000,
          requestId: 'req-0',
          providerCode: 'invalid_request_error',
        },
      },
    ])
    expect(Object.isFrozen((chunks[0] as { error: object }).error)).toBe(true)
  })

  it('recognizes a context overflow 400 and never echoes the key in errors', async () => {
    await using t = await setup()
    t.server.enqueue(
      errorResponse(400, "This model's maximum context length is 1000000 tokens"),
      errorResponse(401, `Authentication Fails, your api key: ${KEY} is invalid`, { type: 'authentication_error' }),
    )
    const overflow = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(overflow.at(-1)).toMatchObject({ error: { code: 'CONTEXT_OVERFLOW', status: 400 } })
    const auth = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(auth.at(-1)).toMatchObject({ error: { code: 'AUTH', status: 401, providerCode: 'authentication_error' } })
    expect(JSON.stringify(auth)).not.toContain(KEY)
    expect(JSON.stringify(auth)).toContain('DEEPSEEK_API_KEY')
  })

  it('ends a stream cut mid-way with a NETWORK error chunk, keeping the partial text', async () => {
    await using t = await setup()
    const steps = completionSteps({ text: ['partial ', 'answer'] })
    t.server.enqueue({ type: 'sse', steps: [...steps.slice(0, 3), { delayMs: 20 }, { disconnect: true }] })
    const chunks = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', reason: 'error', error: { code: 'NETWORK' } })
    const message = await assembleMessage(chunks)
    expect(message.content).toEqual([{ type: 'text', text: 'partial answer' }])
    expect(message.finishReason).toBe('error')
  })

  it('treats a body that ends without [DONE] or a finish reason as a failure', async () => {
    await using t = await setup()
    t.server.enqueue(completionResponse({ text: 'cut', finishReason: null, usage: null, done: false }))
    const chunks = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(chunks.at(-1)).toMatchObject({ reason: 'error', error: { code: 'NETWORK' } })
  })

  // Each trial must cancel; the fastest must be under 100 ms. A loaded machine only adds scheduling
  // delay to a trial, while an adapter that does not cancel at once would never get under the bound.
  it('cancels the HTTP request within 100 ms of an abort and ends with an aborted chunk', async () => {
    await using t = await setup()
    const delays: number[] = []
    for (let trial = 0; trial < 3; trial++) {
      const steps = completionSteps({ text: ['first', 'never'] })
      t.server.enqueue({ type: 'sse', steps: [...steps.slice(0, 2), { hang: true }] })
      const controller = new AbortController()
      const chunks = []
      let abortedAt = 0
      for await (const chunk of t.ctx.llm.stream({}, { messages: [user('hi')], signal: controller.signal })) {
        chunks.push(chunk)
        if (chunk.type === 'text-delta') {
          abortedAt = performance.now()
          controller.abort()
        }
      }
      delays.push((await t.server.waitForCancel(trial, 1000)) - abortedAt)
      expect(chunks.map((c) => c.type)).toEqual(['start', 'text-delta', 'finish'])
      expect(chunks.at(-1)).toEqual({
        type: 'finish',
        reason: 'aborted',
        error: expect.objectContaining({ code: 'ABORTED' }),
      })
    }
    expect(Math.min(...delays)).toBeLessThan(100)
  })

  it('aborts a request still waiting for response headers', async () => {
    await using t = await setup()
    const delays: number[] = []
    for (let trial = 0; trial < 3; trial++) {
      t.server.enqueue({ type: 'hang' })
      const controller = new AbortController()
      const pending = collect(t.ctx.llm.stream({}, { messages: [user('hi')], signal: controller.signal }))
      await t.server.waitForRequests(trial + 1)
      const abortedAt = performance.now()
      controller.abort()
      const chunks = await pending
      delays.push((await t.server.waitForCancel(trial, 1000)) - abortedAt)
      expect(chunks).toEqual([
        { type: 'finish', reason: 'aborted', error: expect.objectContaining({ code: 'ABORTED' }) },
      ])
    }
    expect(Math.min(...delays)).toBeLessThan(100)
  })

  it('reports malformed frames and in-band error events clearly, and keeps serving', async () => {
    await using t = await setup()
    t.server.enqueue(
      {
        type: 'sse',
        steps: [{ data: chunkEvent({ content: 'ok' }) }, { raw: 'data: {"choices": [\n\n' }, { done: true }],
      },
      { type: 'sse', steps: [{ data: { error: { message: 'overloaded', code: 'insufficient_system_resource' } } }] },
      completionResponse({ text: 'fine' }),
    )
    const bad = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(bad.at(-1)).toMatchObject({ reason: 'error', error: { code: 'MALFORMED_RESPONSE', requestId: 'req-0' } })
    const inBand = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(inBand.at(-1)).toMatchObject({ reason: 'error', error: { code: 'PROVIDER_UNAVAILABLE' } })
    const good = await assembleMessage(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(good.content).toEqual([{ type: 'text', text: 'fine' }])
  })

  it('treats finish_reason insufficient_system_resource as a retryable failure', async () => {
    await using t = await setup()
    t.server.enqueue(completionResponse({ text: 'half', finishReason: 'insufficient_system_resource' }))
    const message = await assembleMessage(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(message).toMatchObject({ finishReason: 'error', error: { code: 'PROVIDER_UNAVAILABLE' } })
  })

  it('bounds time to first token separately from keep-alives (the older option name still works)', async () => {
    await using t = await setup({ firstTokenTimeoutMs: 150 })
    const keepAlives = Array.from({ length: 10 }, () => [{ comment: 'keep-alive' }, { delayMs: 30 }]).flat()
    t.server.enqueue({ type: 'sse', steps: [...keepAlives, { hang: true }] })
    const chunks = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(chunks.at(-1)).toMatchObject({ reason: 'error', error: { code: 'TIMEOUT' } })
  })

  it('fails a silent endpoint within firstByteTimeoutMs, naming the bound and the endpoint', async () => {
    await using t = await setup({ firstByteTimeoutMs: 200 })
    t.server.enqueue({ type: 'hang' })
    const chunks = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    const error = (chunks.at(-1) as { error: { code: string; message: string } }).error
    expect(error.code).toBe('TIMEOUT')
    expect(error.message).toContain('firstByteTimeoutMs')
    expect(error.message).toContain(`${t.server.url}/chat/completions`)
    // The adapter hung up: the attempt ended rather than waiting on undici's own 300 s timeout.
    expect(await t.server.waitForCancel(0)).toBeGreaterThan(0)
  })

  it("uses Node's fetch for the default bounds and the undici package only for bounds Node's would cut short", async () => {
    const seen: string[] = []
    const builtIn = globalThis.fetch
    globalThis.fetch = (input, init) => {
      seen.push(String(input))
      return builtIn(input, init)
    }
    try {
      for (const config of [{}, { connectTimeoutMs: 2_000 }, { idleTimeoutMs: 600_000 }]) {
        await using t = await setup(config)
        t.server.enqueue(completionResponse({ text: 'ok' }))
        const message = await assembleMessage(t.ctx.llm.stream({}, { messages: [user('hi')] }))
        expect(message.finishReason).toBe('stop')
        expect(t.server.requests).toHaveLength(1)
      }
    } finally {
      globalThis.fetch = builtIn
    }
    // Only the default row went through the global fetch (which a host may wrap); the others did not.
    expect(seen).toHaveLength(1)
  })

  it('reports a 200 HTML page as not an event stream, with its content type and first bytes', async () => {
    await using t = await setup()
    const page = '<!DOCTYPE html><html><body>Sign in to the proxy</body></html>'
    t.server.enqueue({ type: 'text', status: 200, body: page, headers: { 'content-type': 'text/html' } })
    const chunks = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    const error = (chunks.at(-1) as { error: { code: string; message: string } }).error
    expect(error.code).toBe('MALFORMED_RESPONSE')
    expect(error.message).toContain('text/html')
    expect(error.message).toContain('<!DOCTYPE html>')
    expect(error.message).not.toContain('ended before completion')
  })

  it('accepts an SSE body whose server sent no event-stream content type', async () => {
    await using t = await setup()
    const sse = completionSteps({ text: 'untyped' })
      .map((step) =>
        'done' in step ? 'data: [DONE]\n\n' : 'data' in step ? `data: ${JSON.stringify(step.data)}\n\n` : '',
      )
      .join('')
    t.server.enqueue({ type: 'text', status: 200, body: sse, headers: { 'content-type': 'text/plain' } })
    const message = await assembleMessage(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(message.content).toEqual([{ type: 'text', text: 'untyped' }])
  })

  it('fails with AUTH before any I/O when no key is configured', async () => {
    await using t = await setup({}, {})
    const chunks = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(chunks).toEqual([{ type: 'finish', reason: 'error', error: expect.objectContaining({ code: 'AUTH' }) }])
    expect((chunks[0] as { error: { message: string } }).error.message).toContain('DEEPSEEK_API_KEY')
    expect(t.server.requests).toHaveLength(0)
  })

  it('never forces a tool in thinking mode; with effort none it disables thinking and forces', async () => {
    await using t = await setup()
    t.server.enqueue(completionResponse({ toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{}' }] }))
    const refused = await collect(t.ctx.llm.stream({}, { messages: [user('hi')], toolChoice: 'required' }))
    expect(refused).toEqual([
      { type: 'finish', reason: 'error', error: expect.objectContaining({ code: 'BAD_REQUEST' }) },
    ])
    expect(t.server.requests).toHaveLength(0)
    await collect(
      t.ctx.llm.stream({ reasoningEffort: 'none' }, { messages: [user('hi')], toolChoice: { name: 'read_file' } }),
    )
    expect(t.server.requests[0]?.body).toMatchObject({
      thinking: { type: 'disabled' },
      tool_choice: { type: 'function', function: { name: 'read_file' } },
    })
    expect(t.server.requests[0]?.body.reasoning_effort).toBeUndefined()
  })

  it('refuses aliased reasoning efforts before any I/O', async () => {
    await using t = await setup()
    expect(() => t.ctx.llm.prepareCall({ reasoningEffort: 'medium' })).toThrow(/use one of: none, low, high, max/)
    expect(t.server.requests).toHaveLength(0)
  })

  it("sends back its own reasoning, not another provider's, and images through the loader", async () => {
    await using t = await setup()
    t.server.enqueue(completionResponse({ text: 'ok' }))
    const call = { type: 'tool-call', id: 'c1', name: 'read_file', arguments: { path: 'a' } } as const
    const history: Message[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', ref: 'sha256:abc', mimeType: 'image/png' },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'reasoning', text: 'foreign thoughts', signature: 'sig' }, call],
        finishReason: 'tool-calls',
        provider: 'anthropic',
      },
      { role: 'tool', toolCallId: 'c1', toolName: 'read_file', content: [{ type: 'text', text: 'A' }], isError: false },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'own thoughts' },
          { type: 'text', text: 'done' },
        ],
        finishReason: 'stop',
        provider: 'deepseek',
      },
    ]
    const loadImage = async (ref: string) => new TextEncoder().encode(`bytes of ${ref}`)
    await collect(t.ctx.llm.stream({ model: 'deepseek-flash' }, { messages: history, loadImage }))
    const sent = t.server.requests[0]?.body.messages
    expect(sent[0].content).toEqual([
      { type: 'text', text: 'look' },
      {
        type: 'image_url',
        image_url: { url: `data:image/png;base64,${Buffer.from('bytes of sha256:abc').toString('base64')}` },
      },
    ])
    expect(sent[1]).toMatchObject({ role: 'assistant', content: null, reasoning_content: '' })
    expect(sent[3]).toEqual({ role: 'assistant', content: 'done', reasoning_content: 'own thoughts' })
  })

  it('refuses a key with control characters without echoing it', async () => {
    await using t = await setup({}, { DEEPSEEK_API_KEY: 'sk-bad\nInjected: header' })
    const chunks = await collect(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(chunks.at(-1)).toMatchObject({ error: { code: 'AUTH' } })
    expect(JSON.stringify(chunks)).not.toContain('Injected')
    expect(t.server.requests).toHaveLength(0)
  })

  it('bounds silence between data events once streaming', async () => {
    await using t = await setup({ idleTimeoutMs: 100 })
    const steps = completionSteps({ text: ['a', 'b'] })
    t.server.enqueue({ type: 'sse', steps: [...steps.slice(0, 2), { delayMs: 400 }, ...steps.slice(2)] })
    const message = await assembleMessage(t.ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(message).toMatchObject({ finishReason: 'error', error: { code: 'TIMEOUT' }, content: [{ text: 'a' }] })
  })

  it('works from the environment alone: DEEPSEEK_BASE_URL, DEEPSEEK_API_KEY, DSH_MODEL', async () => {
    const server = await startMockLlmServer({ responses: [completionResponse({ text: 'env ok' })] })
    await using dir = await tempDir()
    const env = { DEEPSEEK_API_KEY: KEY, DEEPSEEK_BASE_URL: `${server.url}/`, DSH_MODEL: 'deepseek-flash' }
    const { ctx, dispose } = await bootLlm(deepseek, undefined, { env, home: dir.path })
    const message = await assembleMessage(ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(message).toMatchObject({ content: [{ type: 'text', text: 'env ok' }], model: 'deepseek-flash' })
    expect(server.requests[0]?.body.model).toBe('deepseek-flash')
    expect(ctx.llm.catalog('deepseek')[0]?.models.map((m) => m.id)).toContain('deepseek-v4-pro')
    await dispose()
    await server.close()
  })
})
