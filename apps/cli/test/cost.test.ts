// Cost per request, as a user gets it: an OpenAI-compatible endpoint with prices set through
// `dsh config set`, a mock server reporting usage (cache hits, reasoning), and the durable log's
// `assistant/message` carrying the cost computed by hand here; a model without a price logs no figure.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData, sessionUsage } from '@dsh/session'
import {
  completionResponse,
  deepseekUsage,
  type MockLlmServer,
  type MockResponse,
  startMockLlmServer,
} from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
let project: string
let server: MockLlmServer
let chat: MockResponse[]

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-cost-'))
  project = join(home, 'project')
  mkdirSync(project)
  chat = []
  server = await startMockLlmServer({
    respond: (request) =>
      request.path === '/v1/models' ? { type: 'json', status: 200, body: { object: 'list', data: [] } } : chat.shift(),
  })
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

/** The id in the header of the one session file. */
function sessionId(): string {
  const file = readdirSync(join(home, 'sessions')).find((name) => name.endsWith('.jsonl')) as string
  return JSON.parse(readFileSync(join(home, 'sessions', file), 'utf8').split('\n')[0] as string).id
}

function dsh(args: string[]) {
  return runDsh(args, {
    home,
    cwd: project,
    modelUrl: 'http://127.0.0.1:9/unused',
    env: { DEEPSEEK_API_KEY: undefined },
  })
}

async function configure(prices: Record<string, number> | undefined) {
  expect((await dsh(['config', 'set', 'endpoints.local.baseUrl', `${server.url}/v1`])).code).toBe(0)
  expect((await dsh(['config', 'set', 'endpoints.local.models', '["qwen"]'])).code).toBe(0)
  if (prices) {
    const set = await dsh(['config', 'set', 'endpoints.local.prices', JSON.stringify(prices)])
    expect(set.code).toBe(0)
  }
  expect((await dsh(['config', 'set', 'model', 'openai-compatible:local/qwen'])).code).toBe(0)
}

describe('cost per request', () => {
  it('logs the cost with each response from the reported usage and the prices the user set', async () => {
    await configure({ input: 2, output: 8, cacheRead: 0.5 })
    // 1000 prompt tokens of which 400 cache hits, 200 completion tokens of which 50 reasoning.
    chat.push(completionResponse({ text: 'priced', usage: deepseekUsage(1000, 200, 400, 50) }))
    const run = await dsh(['run', '--output', 'json', 'hi'])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const events = durableEvents(home)
    const [message] = eventData(events, 'assistant/message')
    // By hand: 600 uncached x $2/M + 400 cached x $0.5/M + 200 out x $8/M = $0.0012 + $0.0002 + $0.0016.
    expect(message?.cost?.usd).toBeCloseTo(0.003, 12)
    expect(message?.cost?.prices).toEqual({ input: 2, output: 8, cacheRead: 0.5 })
    expect(message?.message.usage).toMatchObject({ inputTokens: 1000, cacheHitTokens: 400, reasoningTokens: 50 })
    // The session's cost is a fold of its log.
    const usage = sessionUsage(events)
    expect(usage).toMatchObject({ requests: 1, unknownRequests: 0 })
    expect(usage.usd).toBeCloseTo(0.003, 12)
    expect(usage.models[0]).toMatchObject({
      model: 'openai-compatible:local/qwen',
      cacheHitTokens: 400,
      outputTokens: 200,
    })
    const summary = JSON.parse(run.stdout)
    expect(summary.cost).toEqual({ usd: 0.003, text: '$0.003' })
    expect(summary.usage).toMatchObject({ inputTokens: 1000, outputTokens: 200, cacheHitTokens: 400 })
    // The session list's cost column, from the store's running sum.
    const list = await dsh(['sessions', 'ls'])
    expect(list.stdout.trim().split('\n')[1]).toMatch(/\s\$0\.003$/)
    const listed = JSON.parse((await dsh(['sessions', 'ls', '--json'])).stdout)
    expect(listed[0].cost).toEqual({
      usd: 0.003,
      requests: 1,
      unknownRequests: 0,
      models: { 'openai-compatible:local/qwen': { usd: 0.003, requests: 1, unknownRequests: 0 } },
    })
    // /cost, the same command the terminal chat, the web page and RPC `command/run` dispatch.
    const cost = await dsh(['run', '--resume', sessionId(), '/cost'])
    expect(cost.code).toBe(0)
    expect(cost.stdout).toContain(
      'openai-compatible:local/qwen: 1 request, 1000 in (400 cached, 40% cache hits), 200 out (50 reasoning), $0.003',
    )
    expect(cost.stdout).toMatch(/waiting on the model \d+\.\ds, on tools 0\.0s/)
    // /usage across the store's sessions: today, the last 7 days, per workspace.
    const acrossSessions = await dsh(['run', '--resume', sessionId(), '/usage'])
    expect(acrossSessions.code).toBe(0)
    expect(acrossSessions.stdout).toContain('today: $0.003 (1 request)')
    expect(acrossSessions.stdout).toContain('    openai-compatible:local/qwen: $0.003 (1 request)')
    expect(acrossSessions.stdout).toContain(`  ${project}: $0.003`)
  })

  it('--max-cost stops the turn before the request past the budget, after the tool step, exit 8', async () => {
    await configure({ input: 2, output: 8, cacheRead: 0.5 })
    chat.push(
      completionResponse({
        toolCalls: [{ id: 'c1', name: 'write', arguments: JSON.stringify({ path: 'note.txt', content: 'hi\n' }) }],
        usage: deepseekUsage(1000, 200, 400),
      }),
      completionResponse({ text: 'never asked for', usage: deepseekUsage(1000, 10) }),
    )
    const run = await dsh(['run', '--yes', '--max-cost', '0.002', 'write note.txt'])
    expect(run.code).toBe(8)
    expect(run.stderr).toContain('cost budget')
    // The first request ($0.003) ran with its tool; the second was never sent.
    expect(server.requests.filter((request) => request.path === '/v1/chat/completions')).toHaveLength(1)
    expect(readFileSync(join(project, 'note.txt'), 'utf8')).toBe('hi\n')
    const events = durableEvents(home)
    expect(eventData(events, 'tool/result')[0]?.message.isError).toBe(false)
    const end = eventData(events, 'turn/end').at(-1)
    expect(end?.reason).toBe('blocked')
    expect(end?.message).toContain('$0.003 spent of $0.002')
    const id = sessionId()
    // Already past it: the next turn stops before its first request, once (it started again and again
    // with its input still queued before).
    const still = await dsh(['run', '--resume', id, '--max-cost', '0.002', 'more'])
    expect(still.code).toBe(8)
    expect(server.requests.filter((request) => request.path === '/v1/chat/completions')).toHaveLength(1)
    expect(eventData(durableEvents(home), 'turn/end').filter((ended) => ended.reason === 'blocked')).toHaveLength(2)
    // A budget above what was spent lets the next turn go on.
    chat.push(completionResponse({ text: 'resumed', usage: deepseekUsage(100, 10) }))
    const again = await dsh(['run', '--resume', id, '--max-cost', '1', 'go on'])
    expect(again.code).toBe(0)
  })

  it('the budget.session setting stops a turn the same way', async () => {
    await configure({ input: 2, output: 8 })
    expect((await dsh(['config', 'set', 'budget.session', '0.001'])).code).toBe(0)
    chat.push(
      completionResponse({
        toolCalls: [{ id: 'c1', name: 'write', arguments: JSON.stringify({ path: 'a.txt', content: 'a\n' }) }],
        usage: deepseekUsage(1000, 100),
      }),
    )
    const run = await dsh(['run', '--yes', 'write a.txt'])
    expect(run.code).toBe(8)
    expect(eventData(durableEvents(home), 'turn/end').at(-1)?.message).toContain('$0.0028 spent of $0.001')
  })

  it('the budget.day setting counts every session of the day and stops the turn past it, exit 8', async () => {
    await configure({ input: 2, output: 8, cacheRead: 0.5 })
    expect((await dsh(['config', 'set', 'budget.day', '0.004'])).code).toBe(0)
    const completions = () => server.requests.filter((request) => request.path === '/v1/chat/completions').length
    // One session spends $0.003 today.
    chat.push(completionResponse({ text: 'first', usage: deepseekUsage(1000, 200, 400, 50) }))
    expect((await dsh(['run', 'one'])).code).toBe(0)
    // A second session may start ($0.003 < $0.004); after its first $0.003 request the day is past it.
    chat.push(
      completionResponse({
        toolCalls: [{ id: 'c1', name: 'write', arguments: JSON.stringify({ path: 'b.txt', content: 'b\n' }) }],
        usage: deepseekUsage(1000, 200, 400, 50),
      }),
      completionResponse({ text: 'never asked for', usage: deepseekUsage(10, 10) }),
    )
    const second = await dsh(['run', '--yes', 'two'])
    expect(second.code).toBe(8)
    expect(second.stderr).toContain('daily budget')
    expect(completions()).toBe(2)
    expect(readFileSync(join(project, 'b.txt'), 'utf8')).toBe('b\n')
    const ends = readdirSync(join(home, 'sessions'))
      .filter((name) => name.endsWith('.jsonl'))
      .flatMap((name) =>
        readFileSync(join(home, 'sessions', name), 'utf8')
          .trim()
          .split('\n')
          .slice(1),
      )
      .map((line) => JSON.parse(line))
      .filter((event) => event.type === 'turn/end' && event.data.reason === 'blocked')
    expect(ends.map((event) => event.data.message)).toEqual([
      expect.stringContaining('$0.006 spent of $0.004 across sessions'),
    ])
    // A third session is stopped before its first request.
    const third = await dsh(['run', 'three'])
    expect(third.code).toBe(8)
    expect(completions()).toBe(2)
  })

  it('the prices setting prices a model whose catalog has none (DeepSeek)', async () => {
    const deepseek = (args: string[]) =>
      runDsh(args, { home, cwd: project, modelUrl: server.url, env: { DEEPSEEK_API_KEY: 'sk-test' } })
    const set = await deepseek([
      'config',
      'set',
      'prices',
      JSON.stringify({ 'deepseek:deepseek-v4-pro': { input: 0.5, output: 2, cacheRead: 0.05 } }),
    ])
    expect(set.code, set.stderr).toBe(0)
    chat.push(completionResponse({ text: 'priced', usage: deepseekUsage(1000, 100, 800) }))
    const run = await deepseek(['run', '--output', 'json', '--model', 'deepseek:deepseek-v4-pro', 'hi'])
    expect(run.code, run.stderr).toBe(0)
    // By hand: 200 uncached x $0.5/M + 800 cached x $0.05/M + 100 out x $2/M = $0.0001 + $0.00004 + $0.0002.
    const [message] = eventData(durableEvents(home), 'assistant/message')
    expect(message?.cost?.usd).toBeCloseTo(0.00034, 12)
    // A mistyped entry is refused with the expected shape.
    const bad = await deepseek(['config', 'set', 'prices', JSON.stringify({ 'deepseek:x': { input: 1 } })])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toMatch(/output/)
  })

  it('a compaction’s summary request is paid for and counted', async () => {
    await configure({ input: 2, output: 8 })
    chat.push(completionResponse({ text: 'one', usage: deepseekUsage(1000, 100) }))
    expect((await dsh(['run', 'first'])).code).toBe(0)
    const id = sessionId()
    chat.push(completionResponse({ text: 'two', usage: deepseekUsage(1000, 100) }))
    expect((await dsh(['run', '--resume', id, 'second'])).code).toBe(0)
    // The summary: 3000 in x $2/M + 500 out x $8/M = $0.01.
    chat.push(completionResponse({ text: 'A summary.', usage: deepseekUsage(3000, 500) }))
    const compact = await dsh(['run', '--resume', id, '/compact'])
    expect(compact.code, compact.stderr).toBe(0)
    const ended = eventData(durableEvents(home), 'compaction/end').at(-1)
    expect(ended).toMatchObject({ ok: true, model: 'openai-compatible:local/qwen', usage: { inputTokens: 3000 } })
    expect(ended?.cost?.usd).toBeCloseTo(0.01, 12)
    // Two answers at $0.0028 each, plus the summary.
    expect(sessionUsage(durableEvents(home)).usd).toBeCloseTo(0.0156, 12)
    const listed = JSON.parse((await dsh(['sessions', 'ls', '--json'])).stdout)
    expect(listed[0].cost).toMatchObject({ requests: 3, unknownRequests: 0 })
    expect(listed[0].cost.usd).toBeCloseTo(0.0156, 12)
  })

  it('a model without a price logs no figure: unknown, never zero', async () => {
    await configure(undefined)
    chat.push(completionResponse({ text: 'unpriced', usage: deepseekUsage(100, 10) }))
    const run = await dsh(['run', '--output', 'json', 'hi'])
    expect(run.code).toBe(0)
    const events = durableEvents(home)
    const [message] = eventData(events, 'assistant/message')
    expect(message?.cost).toEqual({})
    expect(sessionUsage(events)).toMatchObject({ requests: 1, unknownRequests: 1, usd: 0 })
    expect(JSON.parse(run.stdout).cost).toEqual({ text: 'unknown' })
  })
})
