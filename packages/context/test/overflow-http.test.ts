// Overflow -> compact -> retry over real HTTP: the deepseek adapter against the mock server, which
// answers one request with DeepSeek's context-length error (HTTP 400, invalid_request_error body).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool } from '@dsh/agent/tools'
import deepseek from '@dsh/llm/deepseek'
import CredentialsService from '@dsh/settings/credentials'
import { completionResponse, errorResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { expect, it } from 'vitest'
import { createContextHarness } from './harness.js'

// The provider's wording (OpenAI-compatible error body, type and code invalid_request_error); the
// numbers are this test's.
const OVERFLOW =
  "This model's maximum context length is 4096 tokens. However, you requested 5210 tokens (5210 in the messages, 0 in the completion). Please reduce the length of the messages or completion."

type Body = { messages: Array<{ role: string; content?: string | null; tool_call_id?: string }> }

const isSummary = (request: RecordedRequest) =>
  (request.body as Body).messages[0]?.content?.startsWith('You compact the history') === true

it('compacts on CONTEXT_OVERFLOW and retries the request once, over HTTP', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dsh-overflow-'))
  const agentAnswers = [
    completionResponse({ toolCalls: [{ id: 'call_1', name: 'dump', arguments: '{"n":1}' }] }),
    completionResponse({ toolCalls: [{ id: 'call_2', name: 'dump', arguments: '{"n":2}' }] }),
    completionResponse({ toolCalls: [{ id: 'call_3', name: 'dump', arguments: '{"n":3}' }] }),
    errorResponse(400, OVERFLOW),
    completionResponse({ text: 'Finished after the compaction.' }),
  ]
  await using server = await startMockLlmServer({
    respond: (request) =>
      isSummary(request)
        ? completionResponse({ text: 'The user asked for three dumps; dumps 1 and 2 returned long listings.' })
        : agentAnswers.shift(),
  })
  try {
    const root = await createContextHarness({
      provider: 'deepseek',
      model: 'deepseek-v4-pro',
      pruning: false,
      compaction: { auto: false },
      before: async (r) => {
        await r.plugin(CredentialsService, {
          env: { DEEPSEEK_API_KEY: 'sk-overflow', DEEPSEEK_BASE_URL: server.url },
          home: dir,
          cwd: dir,
        })
        await r.plugin(deepseek, {})
      },
    })
    root.tools.register(
      defineTool<{ n: number }>({
        name: 'dump',
        description: 'prints a long listing',
        parameters: { type: 'object', properties: { n: { type: 'number' } } },
        execute: ({ n }) => `listing ${n}\n`.padEnd(3_000, '.'),
      }),
    )
    const agent = await root.agents.create()
    agent.followup('dump three times')
    await agent.whenIdle()
    const session = agent.session

    expect(session.events.at(-1)?.data).toEqual({ reason: 'completed' })
    // agent 1-3, the overflowing agent 4, the summary call, the retried agent 4.
    expect(server.requests).toHaveLength(6)
    expect(server.requests.map(isSummary)).toEqual([false, false, false, false, true, false])
    const failed = server.requests[3]?.body as Body
    const retried = server.requests[5]?.body as Body
    // The retry carries the summary in place of the old range and keeps the last call with its result.
    expect(retried.messages.length).toBeLessThan(failed.messages.length)
    const first = retried.messages.find((m) => m.role !== 'system')
    expect(first?.role).toBe('user')
    expect(first?.content).toContain('The user asked for three dumps')
    expect(retried.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['call_3'])

    // The log: the failed attempt's header, the compaction boundary facts, the replacement, the retry header.
    const tail = session.events
      .filter((e) => e.type !== 'assistant/chunk')
      .map((e) => (e.type === 'request/header' ? `header:${e.data.reason ?? ''}` : e.type))
    const from = tail.lastIndexOf('compaction/start') - 2
    expect(tail.slice(from)).toEqual([
      'header:',
      'request/context',
      'compaction/start',
      'user/message',
      'compaction/end',
      'header:retry 1 (overflow compaction)',
      'request/context',
      'assistant/message',
      'step/end',
      'turn/end',
    ])
    const start = session.events.find((e) => e.type === 'compaction/start')
    expect(start?.data).toMatchObject({ trigger: 'overflow', start: 0 })
    const end = session.events.find((e) => e.type === 'compaction/end')
    expect(end?.data).toMatchObject({ trigger: 'overflow', ok: true })
    const summary = session.events[end?.data.ok ? end.data.summarySeq : -1]
    expect(summary?.surfaceOp).toMatchObject({ op: 'replace', start: 0 })
    // Every raw tool result is still in the log and in the transcript.
    expect(session.transcript().filter((e) => e.type === 'tool/result')).toHaveLength(3)
    root.invariants.assert()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

it('retries an overflow only once per step: a second overflow ends the turn with the error', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dsh-overflow-'))
  const agentAnswers = [
    completionResponse({ toolCalls: [{ id: 'call_1', name: 'dump', arguments: '{"n":1}' }] }),
    completionResponse({ toolCalls: [{ id: 'call_2', name: 'dump', arguments: '{"n":2}' }] }),
    errorResponse(400, OVERFLOW),
    errorResponse(400, OVERFLOW),
  ]
  await using server = await startMockLlmServer({
    respond: (request) => (isSummary(request) ? completionResponse({ text: 'short summary' }) : agentAnswers.shift()),
  })
  try {
    const root = await createContextHarness({
      provider: 'deepseek',
      model: 'deepseek-v4-pro',
      pruning: false,
      compaction: { auto: false },
      before: async (r) => {
        await r.plugin(CredentialsService, {
          env: { DEEPSEEK_API_KEY: 'sk-overflow', DEEPSEEK_BASE_URL: server.url },
          home: dir,
          cwd: dir,
        })
        await r.plugin(deepseek, {})
      },
    })
    root.tools.register(
      defineTool({
        name: 'dump',
        description: 'prints a long listing',
        parameters: { type: 'object' },
        execute: () => 'x'.repeat(3_000),
      }),
    )
    const agent = await root.agents.create()
    agent.followup('dump')
    await agent.whenIdle()
    const session = agent.session
    expect(server.requests.map(isSummary)).toEqual([false, false, false, true, false])
    expect(session.events.filter((e) => e.type === 'compaction/start')).toHaveLength(1)
    expect(session.events.at(-1)?.data).toMatchObject({ reason: 'error' })
    const last = session.events.filter((e) => e.type === 'assistant/message').at(-1)
    expect(last?.data.message.error?.code).toBe('CONTEXT_OVERFLOW')
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
