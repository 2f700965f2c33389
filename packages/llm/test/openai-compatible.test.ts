import { chunkEvent, completionResponse, startMockLlmServer } from '@dsh/test-support'
import { describe, expect, it } from 'vitest'
import { assembleMessage, type Message } from '../src/index.js'
import openaiCompatible from '../src/openai-compatible.js'
import { bootLlm, collect, tempDir } from './helpers.js'

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] })

describe('openai-compatible adapter (the same implementation, OpenAI dialect)', () => {
  it('reads `reasoning`, Ollama-style whole tool calls numbered 0, and `stop` with tool calls', async () => {
    await using server = await startMockLlmServer()
    await using dir = await tempDir()
    server.enqueue({
      type: 'sse',
      steps: [
        { data: chunkEvent({ role: 'assistant', content: '' }) },
        { data: chunkEvent({ reasoning: 'pondering' }) },
        {
          data: chunkEvent({
            tool_calls: [{ index: 0, id: 'call_a', function: { name: 'read', arguments: '{"p":"a"}' } }],
          }),
        },
        {
          data: chunkEvent({
            tool_calls: [{ index: 0, id: 'call_b', function: { name: 'read', arguments: '{"p":"b"}' } }],
          }),
        },
        { data: chunkEvent({}, { finishReason: 'stop' }) },
        {
          data: {
            choices: [],
            usage: {
              prompt_tokens: 50,
              completion_tokens: 5,
              total_tokens: 55,
              prompt_tokens_details: { cached_tokens: 32 },
            },
          },
        },
        { done: true },
      ],
    })
    const { ctx, dispose } = await bootLlm(
      openaiCompatible,
      { baseUrl: `${server.url}/v1`, model: 'qwen3' },
      { env: {}, home: dir.path },
    )
    const history: Message[] = [
      user('q'),
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'old thoughts' },
          { type: 'text', text: 'a' },
        ],
        finishReason: 'stop',
      },
      user('read both'),
    ]
    const message = await assembleMessage(
      ctx.llm.stream({ provider: 'openai-compatible', reasoningEffort: 'medium' }, { messages: history }),
    )
    expect(message).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'pondering' },
        { type: 'tool-call', id: 'call_a', name: 'read', arguments: { p: 'a' } },
        { type: 'tool-call', id: 'call_b', name: 'read', arguments: { p: 'b' } },
      ],
      finishReason: 'tool-calls',
      usage: { inputTokens: 50, outputTokens: 5, totalTokens: 55, cacheHitTokens: 32, cacheMissTokens: 18 },
      provider: 'openai-compatible',
      model: 'qwen3',
    })
    const [request] = server.requests
    expect(request?.path).toBe('/v1/chat/completions')
    expect(request?.headers.authorization).toBeUndefined()
    expect(request?.body).toMatchObject({ model: 'qwen3', reasoning_effort: 'medium' })
    expect(request?.body.thinking).toBeUndefined()
    expect(request?.body.messages[1]).toEqual({ role: 'assistant', content: 'a' })
    await dispose()
  })

  it('maps a flat vLLM error body and sends the optional key when one is set', async () => {
    await using server = await startMockLlmServer({
      responses: [
        {
          type: 'json',
          status: 400,
          body: { object: 'error', message: 'bad model', type: 'BadRequestError', code: 400 },
        },
      ],
    })
    await using dir = await tempDir()
    const { ctx, dispose } = await bootLlm(
      openaiCompatible,
      { baseUrl: server.url, model: 'm', apiKey: 'LOCAL_KEY' },
      { env: { LOCAL_KEY: 'local-secret' }, home: dir.path },
    )
    const chunks = await collect(ctx.llm.stream({ provider: 'openai-compatible' }, { messages: [user('x')] }))
    expect(chunks.at(-1)).toMatchObject({
      error: { code: 'BAD_REQUEST', status: 400, providerCode: 'BadRequestError' },
    })
    expect(server.requests[0]?.headers.authorization).toBe('Bearer local-secret')
    await dispose()
  })

  it('streams plain DeepSeek-shaped text too', async () => {
    await using server = await startMockLlmServer({ responses: [completionResponse({ text: 'plain' })] })
    await using dir = await tempDir()
    const { ctx, dispose } = await bootLlm(
      openaiCompatible,
      { baseUrl: server.url, model: 'm' },
      { env: {}, home: dir.path },
    )
    const message = await assembleMessage(ctx.llm.stream({ provider: 'openai-compatible' }, { messages: [user('x')] }))
    expect(message.content).toEqual([{ type: 'text', text: 'plain' }])
    await dispose()
  })
})
