// Named OpenAI-compatible endpoints from the `endpoints` setting: routing by model prefix, the model
// lists of `/models` (cached on disk), and the `model` setting choosing them by default.
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'
import { describe, expect, it } from 'vitest'
import { modelOf } from '../src/endpoints.js'
import { assembleMessage, type Message } from '../src/index.js'
import openaiCompatible from '../src/openai-compatible.js'
import { bootLlm, tempDir } from './helpers.js'

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] })

describe('openai-compatible endpoints', () => {
  it('sends openai-compatible:NAME/MODEL to the named endpoint as MODEL, with its key', async () => {
    await using server = await startMockLlmServer({ responses: [completionResponse({ text: 'local ok' })] })
    await using dir = await tempDir()
    await writeFile(
      join(dir.path, 'settings.yaml'),
      `endpoints:\n  local:\n    baseUrl: ${server.url}/v1\n    apiKey: LOCAL_KEY\nmodel: openai-compatible:local/qwen3:8b\n`,
    )
    const { ctx, dispose } = await bootLlm(openaiCompatible, undefined, { env: { LOCAL_KEY: 'lk-1' }, home: dir.path })
    const message = await assembleMessage(ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(message).toMatchObject({
      provider: 'openai-compatible',
      model: 'local/qwen3:8b',
      content: [{ text: 'local ok' }],
    })
    expect(server.requests[0]?.path).toBe('/v1/chat/completions')
    expect(server.requests[0]?.body.model).toBe('qwen3:8b')
    expect(server.requests[0]?.headers.authorization).toBe('Bearer lk-1')
    await dispose()
  })

  it('names the way to add an endpoint when a model has none, before any I/O', async () => {
    await using dir = await tempDir()
    const { ctx, dispose } = await bootLlm(openaiCompatible, undefined, { env: {}, home: dir.path })
    const message = await assembleMessage(
      ctx.llm.stream({ provider: 'openai-compatible', model: 'x/y' }, { messages: [user('hi')] }),
    )
    expect(message.error?.code).toBe('NO_ADAPTER')
    expect(message.error?.message).toContain('dsh config set endpoints.NAME.baseUrl URL')
    expect(await ctx.llm.catalogs({ provider: 'openai-compatible' })).toEqual([
      { provider: 'openai-compatible', configured: false, defaultModel: '', models: [] },
    ])
    await dispose()
  })

  it('lists /models of each endpoint with context windows and prices, cached on disk for the next process', async () => {
    await using server = await startMockLlmServer({
      respond: (request) =>
        request.path === '/models'
          ? {
              type: 'json',
              status: 200,
              body: {
                object: 'list',
                data: [
                  { id: 'qwen3', object: 'model', max_model_len: 32768 },
                  { id: 'or/model', context_length: 128000, pricing: { prompt: '0.000002', completion: '0.000008' } },
                ],
              },
            }
          : undefined,
    })
    await using dir = await tempDir()
    await writeFile(
      join(dir.path, 'settings.yaml'),
      `endpoints:\n  local:\n    baseUrl: ${server.url}\n    models: [extra]\n`,
    )
    const first = await bootLlm(openaiCompatible, undefined, { env: {}, home: dir.path })
    const [catalog] = await first.ctx.llm.catalogs({ provider: 'openai-compatible' })
    expect(catalog).toMatchObject({ configured: true })
    expect(catalog?.models).toEqual([
      { id: 'local/qwen3', contextWindow: 32768 },
      { id: 'local/or/model', contextWindow: 128000, cost: { input: 2, output: 8 } },
      { id: 'local/extra' },
    ])
    // The request path's context window comes from the same (now loaded) catalog.
    expect(first.ctx.llm.catalog('openai-compatible')[0]?.models[0]).toEqual({
      id: 'local/qwen3',
      contextWindow: 32768,
    })
    await first.dispose()
    const cache = join(dir.path, 'cache', 'models', 'local.json')
    expect(JSON.parse(readFileSync(cache, 'utf8')).models).toHaveLength(2)

    const second = await bootLlm(openaiCompatible, undefined, { env: {}, home: dir.path })
    await second.ctx.llm.ready('openai-compatible')
    expect(second.ctx.llm.catalog('openai-compatible')[0]?.models).toHaveLength(3)
    expect(server.requests.filter((request) => request.path === '/models')).toHaveLength(1)
    await second.dispose()
  })

  it('refuses an endpoint entry without a base URL, naming the file', async () => {
    await using dir = await tempDir()
    await mkdir(dir.path, { recursive: true })
    await writeFile(join(dir.path, 'settings.yaml'), 'endpoints:\n  local:\n    apiKey: K\n')
    const { ctx, dispose } = await bootLlm(openaiCompatible, undefined, { env: {}, home: dir.path })
    expect(() => ctx.settings.check()).toThrow(
      /settings\.yaml: endpoints\.local: missing field "baseUrl" \(allowed: NAME: \{ baseUrl: http\(s\):\/\/\.\.\., apiKey\?/,
    )
    expect(existsSync(join(dir.path, 'cache'))).toBe(false)
    await dispose()
  })

  it('reads context windows, reasoning and prices from the fields servers use', () => {
    expect(modelOf({ id: 'a', context_length: 8192, supported_parameters: ['tools', 'reasoning'] })).toEqual({
      id: 'a',
      contextWindow: 8192,
      reasoning: true,
    })
    expect(modelOf({ id: 'b', max_context_length: '4096', name: 'B' })).toEqual({
      id: 'b',
      label: 'B',
      contextWindow: 4096,
    })
    expect(modelOf({ object: 'model' })).toBeUndefined()
  })
})
