// @dsh/sdk against the built CLI: `dsh rpc` as a child process, DSH_HOME in a temp dir, the model
// behind the mock SSE server, test tools loaded with a --patch row. Outcomes are read from the disk.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AgentLifecycleNotification, DshClient, DshRpcError, type SessionEventNotification } from '../src/index.js'

const cliPath = fileURLToPath(new URL('../../../apps/cli/bin/dsh.js', import.meta.url))
const toolsFixture = fileURLToPath(new URL('../../surfaces/test/rpc/fixtures/test-tools.mjs', import.meta.url))

let home: string
let server: MockLlmServer
let patch: string

function client(extra: Partial<ConstructorParameters<typeof DshClient>[0]> = {}): DshClient {
  return new DshClient({
    cliPath,
    args: ['--patch', patch],
    cwd: home,
    env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
    closeStepMs: 5000,
    ...extra,
  })
}

function durableEvents(sessionId: string): Array<{ type: string; seq: number; data: Record<string, unknown> }> {
  const lines = readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
  // Each line ends with its checksum member (`crc`), which is the file's, not the event's.
  return lines.slice(1).map((line) => {
    const { crc: _crc, hash: _hash, ...event } = JSON.parse(line)
    return event
  })
}

async function until(check: () => boolean, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

function toolCall(id: string, name: string, args: Record<string, unknown>) {
  return { id, name, arguments: JSON.stringify(args) }
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-sdk-'))
  server = await startMockLlmServer()
  patch = join(home, 'tools.yml')
  writeFileSync(patch, `- id: test-tools\n  use: ${JSON.stringify(toolsFixture)}\n  config: { ask: [write_file] }\n`)
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

// Each test talks to real processes; the machine may be loaded, so the budget is generous.
describe('@dsh/sdk over dsh rpc', { timeout: 90_000 }, () => {
  let dsh: DshClient
  let firstSession: string
  beforeAll(() => {
    dsh = client()
  })
  afterAll(async () => {
    await dsh.close()
  }, 60_000)

  it('memoises initialize and reports the runtime capabilities', async () => {
    const [a, b] = await Promise.all([dsh.start(), dsh.start()])
    expect(a).toBe(b)
    expect(a).toMatchObject({
      protocolVersion: 1,
      cwd: home,
      capabilities: { persistence: true, approvals: true, questions: true },
    })
  })

  it('"allow similar": the handler keeps the suggested rule for the session; the next such call is not asked', async () => {
    const paths = [join(home, 'similar-a.txt'), join(home, 'similar-b.txt')]
    const asked: Array<string | undefined> = []
    dsh.onApproval((request) => {
      asked.push(request.suggestedRule)
      return request.suggestedRule
        ? { decision: 'allowed-once', rule: { text: request.suggestedRule, scope: 'session' } }
        : 'rejected'
    })
    server.enqueue(
      completionResponse({ toolCalls: [toolCall('call-s1', 'write_file', { path: paths[0], content: 'a' })] }),
      completionResponse({ toolCalls: [toolCall('call-s2', 'write_file', { path: paths[1], content: 'b' })] }),
      completionResponse({ text: 'Both.' }),
    )
    const result = await dsh.run('write both')
    dsh.onApproval(undefined)
    expect(result.reason).toBe('completed')
    expect(asked).toEqual(['write_file'])
    expect(paths.map((path) => readFileSync(path, 'utf8'))).toEqual(['a', 'b'])
    const decided = durableEvents(result.sessionId).filter((event) => event.type === 'approval/decided')
    expect(decided.map((event) => event.data.rule)).toEqual([{ text: 'write_file', scope: 'session' }, undefined])
  })

  it('runs a tool-using task with an approval round trip; the file and the durable log agree', async () => {
    const allowed = join(home, 'allowed.txt')
    const refused = join(home, 'refused.txt')
    const asked: string[] = []
    dsh.onApproval((request) => {
      asked.push(request.summary)
      return request.summary.includes('refused') ? { decision: 'rejected', reason: 'not that file' } : 'allowed-once'
    })
    server.enqueue(
      completionResponse({
        toolCalls: [
          toolCall('call-1', 'write_file', { path: allowed, content: 'hello' }),
          toolCall('call-2', 'write_file', { path: refused, content: 'nope' }),
        ],
      }),
      completionResponse({ text: ['Wrote ', 'one file.'] }),
    )
    const seen: SessionEventNotification[] = []
    const stop = dsh.onEvent((event) => seen.push(event))
    const result = await dsh.run('write two files')
    stop()
    dsh.onApproval(undefined)
    firstSession = result.sessionId
    expect(result).toMatchObject({ text: 'Wrote one file.', reason: 'completed' })
    expect(asked).toEqual([`Write ${allowed}: ${allowed}`, `Write ${refused}: ${refused}`])
    expect(readFileSync(allowed, 'utf8')).toBe('hello')
    expect(existsSync(refused)).toBe(false)
    const log = durableEvents(result.sessionId)
    const results = log.filter((event) => event.type === 'tool/result').map((event) => event.data)
    expect(results).toMatchObject([
      { message: { toolCallId: 'call-1', isError: false } },
      { message: { toolCallId: 'call-2', isError: true }, code: 'APPROVAL_REJECTED' },
    ])
    expect(JSON.stringify(results[1])).toContain('not that file')
    // The notifications are the durable log, event for event, from the prompt's splice on.
    const streamed = seen.filter((n) => n.sessionId === result.sessionId).map((n) => n.event)
    expect(streamed).toEqual(log.slice(log.length - streamed.length))
    expect(result.events.map((n) => n.event)).toEqual(streamed.slice(streamed.length - result.events.length))
    // The second request carried both tool results back to the model.
    const messages = server.requests.at(-1)?.body.messages as Array<{ role: string }>
    expect(messages.filter((message) => message.role === 'tool')).toHaveLength(2)
    // initialize reported the model the session then used: the one its requests were sent with.
    const { model } = await dsh.start()
    expect(model.provider).toBe('deepseek')
    expect(model.model).not.toBe('')
    const headers = log.filter((event) => event.type === 'request/header')
    expect(headers.length).toBeGreaterThan(0)
    for (const header of headers) expect(header.data.config).toMatchObject(model)
    expect(server.requests.at(-1)?.body.model).toBe(model.model)
  })

  it('steers a running turn: the activity interval of run() covers the steered step', async () => {
    const { sessionId } = await dsh.createSession()
    const marker = join(home, 'steer-started')
    server.enqueue(
      completionResponse({ toolCalls: [toolCall('call-s', 'wait', { ms: 1500, marker })] }),
      completionResponse({ text: 'Steered.' }),
    )
    const running = dsh.run('wait briefly', { sessionId })
    await until(() => existsSync(marker))
    const steered = await dsh.steer(sessionId, 'and then say Steered.')
    expect(steered).toMatchObject({ sessionId, target: 'next-step' })
    const result = await running
    expect(result).toMatchObject({ sessionId, text: 'Steered.', reason: 'completed' })
    const messages = server.requests.at(-1)?.body.messages as Array<{ role: string; content: unknown }>
    expect(JSON.stringify(messages.at(-1))).toContain('and then say Steered.')
    expect(durableEvents(sessionId).filter((event) => event.type === 'turn/end')).toHaveLength(1)
  })

  it('routes the model questions (ask_user) to the client and the answer back to the model', async () => {
    const asked: unknown[] = []
    dsh.onQuestion((request) => {
      asked.push({ question: request.question, options: request.options, toolCallId: request.toolCallId })
      return 'blue'
    })
    server.enqueue(
      completionResponse({
        toolCalls: [toolCall('call-q', 'ask_user', { question: 'Which colour?', options: ['red', 'blue'] })],
      }),
      completionResponse({ text: 'Blue it is.' }),
    )
    const result = await dsh.run('pick a colour with me')
    dsh.onQuestion(undefined)
    expect(result).toMatchObject({ text: 'Blue it is.', reason: 'completed' })
    expect(asked).toEqual([{ question: 'Which colour?', options: ['red', 'blue'], toolCallId: 'call-q' }])
    const answered = durableEvents(result.sessionId).find((event) => event.type === 'tool/result')
    expect(answered?.data).toMatchObject({ message: { toolCallId: 'call-q', isError: false } })
    expect(JSON.stringify(answered?.data)).toContain('blue')
  })

  it('narrows events to the session tree: a subagent belongs to its parent, its text does not count', async () => {
    server.enqueue(
      completionResponse({
        toolCalls: [toolCall('call-t', 'task', { prompt: 'count the files', description: 'count' })],
      }),
      completionResponse({ text: 'Three files.' }),
      completionResponse({ text: 'The child counted three.' }),
    )
    const lifecycle: AgentLifecycleNotification[] = []
    const stop = dsh.subscribe((n) => {
      if (n.method === 'agent/lifecycle') lifecycle.push(n.params)
    })
    const result = await dsh.run('delegate the count')
    stop()
    expect(result).toMatchObject({ text: 'The child counted three.', reason: 'completed' })
    const child = lifecycle.find((n) => n.type === 'created' && !n.root)
    expect(child).toMatchObject({ root: false, parentSessionId: result.sessionId })
    const childEvents = result.events.filter((n) => n.sessionId === child?.sessionId)
    expect(childEvents.map((n) => n.event.type)).toContain('assistant/message')
    expect(childEvents.every((n) => n.parentSessionId === result.sessionId)).toBe(true)
    expect(dsh.inTree(child?.sessionId ?? '', result.sessionId)).toBe(true)
  })

  it('cancels a running tool call; the turn ends aborted and the tool saw the abort', async () => {
    const { sessionId } = await dsh.createSession()
    const marker = join(home, 'wait-started')
    server.enqueue(completionResponse({ toolCalls: [toolCall('call-w', 'wait', { ms: 60_000, marker })] }))
    const receipt = await dsh.prompt(sessionId, 'wait a minute')
    expect(receipt).toMatchObject({ sessionId, target: 'next-turn', messageId: expect.any(String) })
    await until(() => existsSync(marker))
    const began = Date.now()
    await dsh.cancel(sessionId)
    expect(Date.now() - began).toBeLessThan(10_000)
    const [list] = [await dsh.listSessions()]
    expect(list.data.find((s) => s.sessionId === sessionId)).toMatchObject({ attached: true })
    await dsh.close()
    const log = durableEvents(sessionId)
    expect(log.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    const result = log.find((event) => event.type === 'tool/result')
    expect(JSON.stringify(result?.data)).toContain('stopped early')
  })

  it('resumes a durable session by id in a fresh runtime; the model sees the earlier turns', async () => {
    const again = client()
    try {
      server.enqueue(completionResponse({ text: 'Still here.' }))
      const result = await again.run('are you there?', { sessionId: firstSession })
      expect(result).toMatchObject({ sessionId: firstSession, text: 'Still here.', reason: 'completed' })
      const messages = server.requests.at(-1)?.body.messages as Array<{ role: string; content: unknown }>
      const users = messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content))
      expect(users.some((text) => text.includes('write two files'))).toBe(true)
      expect(users.at(-1)).toContain('are you there?')
      const forked = await again.forkSession(firstSession)
      expect(forked).toMatchObject({ parentSessionId: firstSession })
      const listed = await again.listSessions()
      expect(listed.data.map((s) => s.sessionId)).toEqual(expect.arrayContaining([firstSession, forked.sessionId]))
      // Human /commands run through ctx.commands without a model turn.
      expect(await again.command(firstSession, '/plan on')).toMatchObject({ ok: true, name: 'plan' })
      expect(await again.command(firstSession, '/frobnicate')).toMatchObject({ ok: false, code: 'COMMAND_UNKNOWN' })
    } finally {
      await again.close()
    }
    const log = durableEvents(firstSession)
    expect(log.some((event) => event.type === 'plan/mode')).toBe(true)
    expect(log.filter((event) => event.type === 'turn/end').map((event) => event.data.reason)).toEqual([
      'completed',
      'completed',
    ])
  })

  it('keeps a /model choice made over RPC when another runtime resumes the session; refuses a bad one', async () => {
    const first = client()
    let sessionId = ''
    try {
      server.enqueue(completionResponse({ text: 'On the default.' }))
      sessionId = (await first.run('hello')).sessionId
      expect(await first.command(sessionId, '/model foo:bar')).toMatchObject({ ok: false, code: 'MODEL_UNAVAILABLE' })
      expect(await first.command(sessionId, '/model deepseek-v4-flash')).toMatchObject({ ok: true, name: 'model' })
    } finally {
      await first.close()
    }
    const second = client()
    try {
      server.enqueue(completionResponse({ text: 'On flash.' }))
      expect(await second.run('again', { sessionId })).toMatchObject({ text: 'On flash.' })
      expect(server.requests.at(-1)?.body.model).toBe('deepseek-v4-flash')
    } finally {
      await second.close()
    }
    expect(durableEvents(sessionId).filter((event) => event.type === 'model/selected')).toMatchObject([
      { data: { provider: 'deepseek', model: 'deepseek-v4-flash' } },
    ])
  })

  it('refuses requests with JSON-RPC errors and keeps serving', async () => {
    const rpc = client()
    try {
      await expect(rpc.prompt('no-such-session', 'hi')).rejects.toMatchObject({
        code: -32000,
        data: { code: 'SESSION_NOT_ATTACHED' },
      })
      await expect(rpc.resumeSession('no-such-session')).rejects.toMatchObject({
        code: -32000,
        data: { code: 'SESSION_NOT_FOUND' },
      })
      await expect(
        rpc.request('approval/respond', { requestId: 'x', decision: 'maybe' as never }),
      ).rejects.toMatchObject({
        code: -32602,
      })
      await expect(rpc.request('question/respond', { questionId: 'q', answer: 1 as never })).rejects.toMatchObject({
        code: -32602,
      })
      await expect(rpc.respondQuestion('q', 'yes')).rejects.toMatchObject({
        code: -32000,
        data: { code: 'QUESTION_NOT_FOUND' },
      })
      await expect(rpc.request('nope' as 'shutdown', {})).rejects.toBeInstanceOf(DshRpcError)
      expect((await rpc.createSession()).sessionId).toEqual(expect.any(String))
    } finally {
      await rpc.close()
    }
  })

  it('retries a failed handshake once with a fresh process', async () => {
    const flag = join(home, 'failed-once')
    const flaky = join(home, 'flaky.mjs')
    writeFileSync(
      flaky,
      `import { existsSync, writeFileSync } from 'node:fs'\nif (!existsSync(${JSON.stringify(flag)})) { writeFileSync(${JSON.stringify(flag)}, ''); process.exit(1) }\nawait import(${JSON.stringify(cliPath)})\n`,
    )
    const rpc = client({ cliPath: flaky })
    try {
      await expect(rpc.start()).resolves.toMatchObject({ protocolVersion: 1 })
      expect(existsSync(flag)).toBe(true)
    } finally {
      await rpc.close()
    }
    const broken = client({ cliPath: join(home, 'missing.mjs') })
    await expect(broken.start()).rejects.toBeInstanceOf(DshRpcError)
    await broken.close()
  })
})
