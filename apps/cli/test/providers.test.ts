// Providers and models without a patch row, as a user reaches them: `dsh config set`, a key in the
// environment, `dsh run --model`, `dsh models`. The built binary runs as a child process; the models
// are mock servers speaking each provider's real wire (Chat Completions SSE, Anthropic Messages SSE).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import {
  anthropicResponse,
  completionResponse,
  type MockLlmServer,
  type MockResponse,
  startMockLlmServer,
} from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
let project: string
let server: MockLlmServer
/** Chat answers, served to chat requests only (the model list is answered by path). */
let chat: MockResponse[]

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-providers-'))
  project = join(home, 'project')
  mkdirSync(project)
  chat = []
  server = await startMockLlmServer({
    respond: (request) =>
      request.path === '/v1/models'
        ? { type: 'json', status: 200, body: { object: 'list', data: [{ id: 'qwen', max_model_len: 40960 }] } }
        : chat.shift(),
  })
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

function dsh(args: string[], env: Record<string, string | undefined> = {}) {
  return runDsh(args, { home, cwd: project, modelUrl: 'http://127.0.0.1:9/unused', env })
}

describe('providers and models without YAML', () => {
  it('config set model openai-compatible:local/qwen, then dsh run sends to the configured base URL', async () => {
    expect((await dsh(['config', 'set', 'endpoints.local.baseUrl', `${server.url}/v1`])).code).toBe(0)
    const set = await dsh(['config', 'set', 'model', 'openai-compatible:local/qwen'])
    expect(set.stderr).not.toContain('warning')
    expect(set.code).toBe(0)
    chat.push(completionResponse({ text: 'from local' }))
    const run = await dsh(['run', 'hi'], { DEEPSEEK_API_KEY: undefined })
    expect(run.code).toBe(0)
    const sent = server.requests.find((request) => request.path === '/v1/chat/completions')
    expect(sent?.body.model).toBe('qwen')
    const events = durableEvents(home)
    expect(eventData(events, 'request/header')[0]?.config).toMatchObject({
      provider: 'openai-compatible',
      model: 'local/qwen',
    })
    // The token meter's window is the endpoint's, from its /v1/models.
    expect(eventData(events, 'request/context')[0]).toEqual({ contextWindow: 40960 })
  })

  it('with only ANTHROPIC_API_KEY, dsh run --model anthropic:... completes a tool-using turn (no patch file)', async () => {
    chat.push(
      anthropicResponse({
        model: 'claude-sonnet-4-5',
        text: 'Writing it.',
        toolCalls: [{ id: 'toolu_01', name: 'write', arguments: ['{"path": "note.txt", ', '"content": "hello"}'] }],
      }),
      anthropicResponse({ model: 'claude-sonnet-4-5', text: ['Done', '.'] }),
    )
    const env = {
      DEEPSEEK_API_KEY: undefined,
      ANTHROPIC_API_KEY: 'sk-ant-test',
      ANTHROPIC_BASE_URL: server.url,
    }
    const run = await dsh(['run', '--model', 'anthropic:claude-sonnet-4-5', 'write note.txt'], env)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toBe('Done.\n')
    expect(readFileSync(join(project, 'note.txt'), 'utf8')).toBe('hello')
    expect(existsSync(join(home, 'patch.yml'))).toBe(false)
    expect(server.requests.map((request) => request.path)).toEqual(['/v1/messages', '/v1/messages'])
    expect(server.requests[0]?.headers['x-api-key']).toBe('sk-ant-test')
    expect(server.requests[0]?.body.model).toBe('claude-sonnet-4-5')
    // The second request carries the tool result back in Anthropic's shape.
    const second = JSON.stringify(server.requests[1]?.body.messages)
    expect(second).toContain('"tool_use_id":"toolu_01"')
    const events = durableEvents(home)
    expect(eventData(events, 'tool/result')[0]?.message).toMatchObject({ toolName: 'write', isError: false })
    expect(eventData(events, 'request/context')[0]?.contextWindow).toBeGreaterThan(100000)
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
  })

  it('dsh models --json lists the models of two providers, one from a mock /v1/models', async () => {
    expect((await dsh(['config', 'set', 'endpoints.local.baseUrl', `${server.url}/v1`])).code).toBe(0)
    const result = await dsh(['models', '--json'], { DEEPSEEK_API_KEY: 'sk-test' })
    expect(result.code).toBe(0)
    const rows: Array<{ provider: string; id: string; contextWindow?: number }> = JSON.parse(result.stdout)
    expect(rows).toContainEqual(
      expect.objectContaining({ provider: 'openai-compatible', id: 'local/qwen', contextWindow: 40960 }),
    )
    expect(rows).toContainEqual(
      expect.objectContaining({ provider: 'deepseek', id: 'deepseek-v4-pro', contextWindow: 1_000_000 }),
    )
    expect(new Set(rows.map((row) => row.provider))).toEqual(new Set(['deepseek', 'openai-compatible']))
  })
})
