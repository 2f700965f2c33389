import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import LlmService, { assembleMessage, type Message } from '@dsh/llm'
import CredentialsService from '@dsh/settings/credentials'
import {
  chunkEvent,
  completionResponse,
  deepseekUsage,
  errorResponse,
  type SseStep,
  startMockLlmServer,
} from '@dsh/test-support'
import * as pi from '@mariozechner/pi-ai'
import {
  type Api,
  fauxAssistantMessage,
  fauxText,
  fauxThinking,
  fauxToolCall,
  type Model,
  registerFauxProvider,
} from '@mariozechner/pi-ai'
import { describe, expect, it } from 'vitest'
import piAi, { baseUrlVariable, PI_AI_PROVIDERS, type PiAiConfig } from '../src/index.js'

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] })

async function boot(config: PiAiConfig, env: Record<string, string> = {}) {
  const home = await mkdtemp(join(tmpdir(), 'dsh-piai-'))
  const ctx = new Context()
  const fibers = [
    ctx.plugin(CredentialsService, { env, home, cwd: home }),
    ctx.plugin(LlmService),
    ctx.plugin(piAi, config),
  ]
  for (const fiber of fibers) await fiber
  return {
    ctx,
    async [Symbol.asyncDispose]() {
      for (const fiber of fibers.reverse()) await fiber.dispose()
      await rm(home, { recursive: true, force: true })
    },
  }
}

describe('pi-ai adapter', () => {
  it('maps pi-ai events (thinking, text, tool calls, usage) to dsh chunks', async () => {
    const faux = registerFauxProvider({ provider: 'faux', models: [{ id: 'faux-1', reasoning: true }] })
    try {
      faux.setResponses([
        fauxAssistantMessage(
          [fauxThinking('hmm'), fauxText('answer'), fauxToolCall('read', { path: 'a' }, { id: 't1' })],
          {
            stopReason: 'toolUse',
          },
        ),
      ])
      await using t = await boot({ providers: ['faux'], models: { faux: faux.models } })
      const message = await assembleMessage(t.ctx.llm.stream({ provider: 'faux' }, { messages: [user('go')] }))
      expect(message).toMatchObject({
        finishReason: 'tool-calls',
        provider: 'faux',
        model: 'faux-1',
        content: [
          { type: 'reasoning', text: 'hmm' },
          { type: 'text', text: 'answer' },
          { type: 'tool-call', id: 't1', name: 'read', arguments: { path: 'a' } },
        ],
      })
      expect(t.ctx.llm.catalog('faux')[0]?.models[0]?.id).toBe('faux-1')
    } finally {
      faux.unregister()
    }
  })

  it('streams over real HTTP through pi-ai to a custom OpenAI-compatible endpoint, no retries', async () => {
    await using server = await startMockLlmServer({
      responses: [
        completionResponse({ text: ['via ', 'pi-ai'], usage: deepseekUsage(10, 2, 4) }),
        errorResponse(429, 'too many requests'),
      ],
    })
    const model: Model<Api> = {
      id: 'local-model',
      name: 'local',
      api: 'openai-completions',
      provider: 'local',
      baseUrl: server.url,
      reasoning: false,
      input: ['text'],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 32000,
      maxTokens: 4000,
    }
    await using t = await boot(
      { providers: ['local'], models: { local: [model] }, apiKeys: { local: 'LOCAL_KEY' } },
      { LOCAL_KEY: 'local-key' },
    )
    const message = await assembleMessage(t.ctx.llm.stream({ provider: 'local' }, { messages: [user('hi')] }))
    expect(message).toMatchObject({ finishReason: 'stop', content: [{ type: 'text', text: 'via pi-ai' }] })
    expect(server.requests[0]?.body.model).toBe('local-model')
    expect(server.requests[0]?.headers.authorization).toBe('Bearer local-key')
    const failed = await assembleMessage(t.ctx.llm.stream({ provider: 'local' }, { messages: [user('hi')] }))
    expect(failed).toMatchObject({ finishReason: 'error', error: { code: 'RATE_LIMIT' } })
    expect(server.requests).toHaveLength(2)
  })

  it('ends a response that keeps trickling at responseTimeoutMs with TIMEOUT naming the option', async () => {
    await using server = await startMockLlmServer()
    // One token every 50 ms for 30 s: never idle, never done.
    const steps: SseStep[] = []
    for (let i = 0; i < 600; i++) steps.push({ data: chunkEvent({ content: 'x' }) }, { delayMs: 50 })
    server.enqueue({ type: 'sse', steps })
    const model: Model<Api> = {
      id: 'local-model',
      name: 'local',
      api: 'openai-completions',
      provider: 'local',
      baseUrl: server.url,
      reasoning: false,
      input: ['text'],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 32000,
      maxTokens: 4000,
    }
    await using t = await boot(
      { providers: ['local'], models: { local: [model] }, apiKeys: { local: 'LOCAL_KEY' }, responseTimeoutMs: 600 },
      { LOCAL_KEY: 'local-key' },
    )
    const started = Date.now()
    const message = await assembleMessage(t.ctx.llm.stream({ provider: 'local' }, { messages: [user('hi')] }))
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(message).toMatchObject({ finishReason: 'error', error: { code: 'TIMEOUT' } })
    expect(message.error?.message).toMatch(/responseTimeoutMs/)
    // The server saw the client leave.
    await server.waitForCancel(0)
  }, 20_000)

  it('refuses an effort the model does not support and reports a missing key before any I/O', async () => {
    await using t = await boot({ providers: ['anthropic'] })
    await t.ctx.llm.ready('anthropic') // pi-ai is imported on first use
    const catalog = t.ctx.llm.catalog('anthropic')[0]
    expect(catalog?.models.length).toBeGreaterThan(0)
    const plain = catalog?.models.find((m) => m.reasoningEfforts?.length === 1)
    if (plain) {
      expect(() => t.ctx.llm.prepareCall({ provider: 'anthropic', model: plain.id, reasoningEffort: 'high' })).toThrow(
        /does not accept reasoning effort/,
      )
    }
    const message = await assembleMessage(t.ctx.llm.stream({ provider: 'anthropic' }, { messages: [user('hi')] }))
    expect(message).toMatchObject({ finishReason: 'error', error: { code: 'AUTH' } })
    expect(message.error?.message).toContain('ANTHROPIC')
  })

  it('routes every pi-ai provider but deepseek (dsh has its own), with the key variable names of pi-ai', () => {
    expect(Object.keys(PI_AI_PROVIDERS).sort()).toEqual(
      pi
        .getProviders()
        .filter((name) => name !== 'deepseek')
        .sort(),
    )
    expect(PI_AI_PROVIDERS.anthropic).toContain('ANTHROPIC_API_KEY')
    expect(baseUrlVariable('github-copilot')).toBe('GITHUB_COPILOT_BASE_URL')
  })

  it('imports pi-ai on first use, and says a provider is configured only when its key is found', async () => {
    await using t = await boot({}, { ANTHROPIC_API_KEY: 'sk-ant-test' })
    expect(t.ctx.llm.catalog('anthropic')[0]?.models).toEqual([])
    const listed = await t.ctx.llm.catalogs()
    const anthropic = listed.find((entry) => entry.provider === 'anthropic')
    expect(anthropic?.configured).toBe(true)
    expect(anthropic?.models.find((model) => model.contextWindow === 200000)?.cost?.input).toBeGreaterThan(0)
    expect(listed.find((entry) => entry.provider === 'openai')?.configured).toBe(false)
    expect(listed.some((entry) => entry.provider === 'deepseek')).toBe(false)
  })
})
