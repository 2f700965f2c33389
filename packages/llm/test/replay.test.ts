import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { completionResponse, deepseekUsage, errorResponse, startMockLlmServer } from '@dsh/test-support'
import { describe, expect, it } from 'vitest'
import deepseek from '../src/deepseek.js'
import { type AssistantMessage, assembleMessage, type Message } from '../src/index.js'
import replay, { parseSessionLog } from '../src/replay.js'
import scripted, { createScriptedAdapter } from '../src/scripted.js'
import { bootLlm, collect, tempDir } from './helpers.js'

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] })

/** Runs three requests against the mock DeepSeek server and returns the assembled messages. */
async function recordSession(home: string): Promise<AssistantMessage[]> {
  await using server = await startMockLlmServer({
    responses: [
      completionResponse({
        reasoning: 'Look first.',
        toolCalls: [
          { id: 'call_1', name: 'read_file', arguments: ['{"path":', '"a.ts"}'] },
          { id: 'call_2', name: 'bash', arguments: '{"cmd": "ls' },
        ],
        usage: deepseekUsage(100, 20, 64, 5),
      }),
      completionResponse({ reasoning: 'Done.', text: ['All ', 'good.'], usage: deepseekUsage(150, 10, 100) }),
      errorResponse(429, 'slow down', { headers: { 'retry-after': '2' } }),
    ],
  })
  const { ctx, dispose } = await bootLlm(deepseek, { baseUrl: server.url }, { home })
  const out: AssistantMessage[] = []
  for (const text of ['one', 'two', 'three'])
    out.push(await assembleMessage(ctx.llm.stream({}, { messages: [user(text)] })))
  await dispose()
  return out
}

function sessionLog(messages: AssistantMessage[]): string {
  const lines: unknown[] = [{ type: 'session', version: 1, id: 's1', createdAt: '2026-11-30T00:00:00Z', cwd: '/tmp' }]
  let seq = 0
  const time = '2026-11-30T00:00:01Z'
  for (const message of messages) {
    lines.push({ type: 'user/message', seq: seq++, time, data: { message: user('x') }, surfaceOp: { kind: 'append' } })
    lines.push({ type: 'request/header', seq: seq++, time, data: { provider: 'deepseek', model: 'deepseek-v4-pro' } })
    lines.push({ type: 'some/future-event', seq: seq++, time, data: { anything: true }, ignorable: true })
    lines.push({ type: 'assistant/message', seq: seq++, time, data: { message }, surfaceOp: { kind: 'append' } })
  }
  return `${lines.map((line) => JSON.stringify(line)).join('\n')}\n{"type":"turn/en`
}

describe('replay adapter', () => {
  it('reproduces a recorded session exactly through the real pipeline, then ends with a clear error', async () => {
    await using dir = await tempDir()
    const recorded = await recordSession(dir.path)
    expect(recorded.map((m) => m.finishReason)).toEqual(['tool-calls', 'stop', 'error'])
    expect(recorded[0]?.content[2]).toMatchObject({ type: 'tool-call', rawArguments: '{"cmd": "ls' })
    const file = join(dir.path, 'session.jsonl')
    await writeFile(file, sessionLog(recorded))

    const { ctx, dispose } = await bootLlm(replay, { file }, { home: dir.path })
    const replayed: AssistantMessage[] = []
    for (let i = 0; i < recorded.length; i++) {
      replayed.push(await assembleMessage(ctx.llm.stream({ provider: 'replay' }, { messages: [user('again')] })))
    }
    expect(replayed).toEqual(recorded)
    const past = await collect(ctx.llm.stream({ provider: 'replay' }, { messages: [] }))
    expect(past).toEqual([
      { type: 'finish', reason: 'error', error: expect.objectContaining({ code: 'REPLAY_EXHAUSTED' }) },
    ])
    await dispose()
  })

  it('plays inline messages and refuses a corrupt log line at load', async () => {
    await using dir = await tempDir()
    const message: AssistantMessage = {
      role: 'assistant',
      content: [{ type: 'text', text: 'hello' }],
      finishReason: 'stop',
      provider: 'deepseek',
      model: 'deepseek-v4-pro',
    }
    const { ctx, dispose } = await bootLlm(replay, { messages: [message], providers: ['deepseek'] }, { home: dir.path })
    expect(await assembleMessage(ctx.llm.stream({}, { messages: [] }))).toEqual(message)
    await dispose()
    expect(() => parseSessionLog('{"type":"session"}\nnot json\n{"type":"x"}\n', 'bad.jsonl')).toThrow(
      /bad.jsonl line 2 is not JSON/,
    )
  })
})

describe('scripted adapter', () => {
  it('streams its script in order and reports exhaustion', async () => {
    await using dir = await tempDir()
    const script = [
      { role: 'assistant', content: [{ type: 'text', text: 'first' }], finishReason: 'stop' },
      { error: { code: 'RATE_LIMIT', message: 'scripted rate limit' } },
    ]
    const { ctx, dispose } = await bootLlm(scripted, { script }, { home: dir.path })
    const first = await assembleMessage(ctx.llm.stream({ provider: 'scripted' }, { messages: [] }))
    expect(first).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'first' }], finishReason: 'stop' })
    const second = await collect(ctx.llm.stream({ provider: 'scripted' }, { messages: [] }))
    expect(second).toEqual([
      { type: 'finish', reason: 'error', error: { code: 'RATE_LIMIT', message: 'scripted rate limit' } },
    ])
    const third = await collect(ctx.llm.stream({ provider: 'scripted' }, { messages: [] }))
    expect(third[0]).toMatchObject({ error: { code: 'REPLAY_EXHAUSTED' } })
    await dispose()
  })

  it('records dispatches and computes responses per request', async () => {
    const adapter = createScriptedAdapter([
      (dispatch) => ({
        role: 'assistant',
        content: [{ type: 'text', text: `you said ${dispatch.request.messages.length} thing(s)` }],
        finishReason: 'stop',
      }),
    ])
    const message = await assembleMessage(
      adapter.stream({ call: { provider: 'scripted', model: 'scripted' }, request: { messages: [user('a')] } }),
    )
    expect(message.content).toEqual([{ type: 'text', text: 'you said 1 thing(s)' }])
    expect(adapter.dispatches).toHaveLength(1)
  })
})
