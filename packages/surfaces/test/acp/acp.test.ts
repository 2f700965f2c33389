// `dsh acp` driven by the ACP SDK's own client side (`acp.client()` over `ndJsonStream`): the built
// CLI as a child process, the model behind the mock SSE server, test tools loaded with a --patch row.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as acp from '@agentclientprotocol/sdk'
import { completionResponse, errorResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, durableEvents as durableIn, type Editor, editor as editorAt, until, untilStop } from './editor.js'

const toolsFixture = fileURLToPath(new URL('../rpc/fixtures/test-tools.mjs', import.meta.url))

let home: string
let server: MockLlmServer
let patch: string

const editor = () => editorAt({ home, modelUrl: server.url, patch })
const durableEvents = (sessionId: string) => durableIn(home, sessionId)

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-acp-'))
  server = await startMockLlmServer()
  patch = join(home, 'tools.yml')
  writeFileSync(patch, `- id: test-tools\n  use: ${JSON.stringify(toolsFixture)}\n  config: { ask: [write_file] }\n`)
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

// Each test talks to real processes; the machine may be loaded, so the budget is generous.
describe('dsh acp with the ACP SDK client', { timeout: 90_000 }, () => {
  let first: Editor
  let sessionId: string
  const file = () => join(home, 'notes.txt')

  beforeAll(() => {
    first = editor()
  })
  afterAll(async () => {
    first.proc.stdin.end()
    await first.exited
  }, 60_000)

  it('initializes honestly and refuses a relative cwd', async () => {
    const init = await first.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION })
    expect(init).toEqual({
      protocolVersion: 1,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: true, audio: false, embeddedContext: true },
        mcpCapabilities: { http: true, sse: false },
        sessionCapabilities: { close: {}, list: {} },
      },
      authMethods: [],
      agentInfo: { name: 'dsh', title: 'dsh', version: '0.1.0' },
    })
    await expect(
      first.agent.request(acp.methods.agent.session.new, { cwd: 'relative/dir', mcpServers: [] }),
    ).rejects.toMatchObject({ code: -32602 })
  })

  it('prompts with thoughts, tool calls (diff, terminal, plan) and a permission request; settles end_turn', async () => {
    server.enqueue(
      completionResponse({
        reasoning: ['Let me ', 'write it.'],
        toolCalls: [
          call('c-plan', 'todo_write', {
            todos: [{ content: 'write notes', status: 'in_progress', priority: 'high' }],
          }),
          call('c-write', 'write_file', { path: file(), content: 'hello acp' }),
          call('c-echo', 'shell_echo', { text: 'hi' }),
        ],
      }),
      completionResponse({ text: ['Notes ', 'written.'] }),
    )
    const session = await first.agent.buildSession(home).start()
    sessionId = session.sessionId
    void session.prompt('write my notes')
    const { updates, stopReason } = await untilStop(session)
    expect(stopReason).toBe('end_turn')
    expect(readFileSync(file(), 'utf8')).toBe('hello acp')
    expect(first.permissions).toEqual([
      {
        sessionId,
        toolCall: { toolCallId: 'c-write', title: `Write ${file()}: ${file()}`, status: 'pending' },
        options: [
          { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
          { optionId: 'allow-similar', name: 'Always allow write_file', kind: 'allow_always' },
          { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
        ],
      },
    ])
    const thought = updates.flatMap((u) =>
      u.sessionUpdate === 'agent_thought_chunk' && u.content.type === 'text' ? [u.content.text] : [],
    )
    expect(thought.join('')).toBe('Let me write it.')
    const said = updates.flatMap((u) =>
      u.sessionUpdate === 'agent_message_chunk' && u.content.type === 'text' ? [u.content.text] : [],
    )
    expect(said.join('')).toBe('Notes written.')
    const calls = updates.filter((u) => u.sessionUpdate === 'tool_call')
    expect(calls).toEqual([
      expect.objectContaining({ toolCallId: 'c-plan', kind: 'think', status: 'pending' }),
      expect.objectContaining({
        toolCallId: 'c-write',
        kind: 'edit',
        content: [{ type: 'diff', path: file(), oldText: null, newText: 'hello acp' }],
        locations: [{ path: file() }],
      }),
      expect.objectContaining({
        toolCallId: 'c-echo',
        kind: 'execute',
        content: [{ type: 'content', content: { type: 'text', text: '$ echo hi' } }],
      }),
    ])
    expect(updates.find((u) => u.sessionUpdate === 'plan')).toEqual({
      sessionUpdate: 'plan',
      entries: [{ content: 'write notes', status: 'in_progress', priority: 'high' }],
    })
    const done = updates.filter((u) => u.sessionUpdate === 'tool_call_update' && u.status)
    expect(
      done.map((u) => [
        u.sessionUpdate === 'tool_call_update' && u.toolCallId,
        u.sessionUpdate === 'tool_call_update' && u.status,
      ]),
    ).toEqual([
      ['c-plan', 'completed'],
      ['c-write', 'in_progress'],
      ['c-write', 'completed'],
      ['c-echo', 'completed'],
    ])
    expect(done.at(-1)).toMatchObject({
      content: [{ type: 'content', content: { type: 'text', text: '$ echo hi\nhi\n' } }],
    })
    session.dispose()
  })

  it('refuses a second prompt in flight and settles a cancelled prompt as cancelled', async () => {
    const marker = join(home, 'acp-wait')
    server.enqueue(completionResponse({ toolCalls: [call('c-wait', 'wait', { ms: 60_000, marker })] }))
    const session = await first.agent.buildSession(home).start()
    const running = session.prompt('wait a minute')
    await until(() => existsSync(marker))
    await expect(
      first.agent.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: 'text', text: 'again' }],
      }),
    ).rejects.toMatchObject({ code: -32600 })
    await first.agent.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId })
    await expect(running).resolves.toEqual({ stopReason: 'cancelled' })
    session.dispose()
    // Another session of the same connection still works.
    server.enqueue(completionResponse({ text: 'fine' }))
    const other = await first.agent.buildSession(home).start()
    await expect(other.prompt('still there?')).resolves.toEqual({ stopReason: 'end_turn' })
    // A human /command runs through ctx.commands without a model turn.
    const requests = server.requests.length
    await expect(other.prompt('/plan on')).resolves.toEqual({ stopReason: 'end_turn' })
    expect(server.requests.length).toBe(requests)
    expect(durableEvents(other.sessionId).some((event) => event.type === 'plan/mode')).toBe(true)
    // An unknown /word is refused and sends nothing; `//` sends a literal slash text.
    await expect(other.prompt('/bogus')).rejects.toMatchObject({ data: { code: 'COMMAND_UNKNOWN' } })
    expect(server.requests.length).toBe(requests)
    server.enqueue(completionResponse({ text: 'literal' }))
    await expect(other.prompt('//tmp is full')).resolves.toEqual({ stopReason: 'end_turn' })
    expect(JSON.stringify(server.requests.at(-1)?.body.messages)).toContain('"/tmp is full"')
    other.dispose()
  })

  it('reports a rejected permission as a failed tool call, and a failed turn as a JSON-RPC error', async () => {
    const refused = join(home, 'refused.txt')
    const allow = first.answer
    first.answer = () => ({ outcome: { outcome: 'selected', optionId: 'reject-once' } })
    server.enqueue(
      completionResponse({ toolCalls: [call('c-no', 'write_file', { path: refused, content: 'x' })] }),
      completionResponse({ text: 'Understood.' }),
    )
    const session = await first.agent.buildSession(home).start()
    void session.prompt('write the refused file')
    const { updates, stopReason } = await untilStop(session)
    first.answer = allow
    expect(stopReason).toBe('end_turn')
    expect(existsSync(refused)).toBe(false)
    expect(updates.filter((u) => u.sessionUpdate === 'tool_call_update').at(-1)).toMatchObject({
      toolCallId: 'c-no',
      status: 'failed',
    })
    server.enqueue(errorResponse(400, 'the request was malformed'))
    await expect(session.prompt('again')).rejects.toMatchObject({
      code: -32603,
      message: expect.stringContaining('malformed'),
    })
    session.dispose()
  })

  it('"Always allow" keeps the suggested rule in the user settings; the next such call is not asked', async () => {
    const settings = join(home, 'settings.yaml')
    const before = existsSync(settings) ? readFileSync(settings, 'utf8') : undefined
    const allow = first.answer
    first.answer = () => ({ outcome: { outcome: 'selected', optionId: 'allow-similar' } })
    const asked = first.permissions.length
    const [one, two] = [join(home, 'similar-1.txt'), join(home, 'similar-2.txt')]
    server.enqueue(
      completionResponse({ toolCalls: [call('c-s1', 'write_file', { path: one, content: '1' })] }),
      completionResponse({ toolCalls: [call('c-s2', 'write_file', { path: two, content: '2' })] }),
      completionResponse({ text: 'Both.' }),
    )
    const session = await first.agent.buildSession(home).start()
    void session.prompt('write two files')
    const { stopReason } = await untilStop(session)
    first.answer = allow
    try {
      expect(stopReason).toBe('end_turn')
      expect([readFileSync(one, 'utf8'), readFileSync(two, 'utf8')]).toEqual(['1', '2'])
      expect(first.permissions.length - asked).toBe(1)
      expect(readFileSync(settings, 'utf8')).toMatch(/allow:\s*\n\s*- write_file/)
      const decided = durableEvents(session.sessionId).filter((event) => event.type === 'approval/decided')
      expect(decided.map((event) => event.data.rule)).toEqual([{ text: 'write_file', scope: 'user' }, undefined])
    } finally {
      if (before === undefined) rmSync(settings, { force: true })
      else writeFileSync(settings, before)
      session.dispose()
    }
  })

  it('loads a durable session in a new connection by replaying its transcript', async () => {
    first.proc.stdin.end()
    expect(await first.exited).toBe(0)
    expect(durableEvents(sessionId).at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
    const second = editor()
    try {
      await second.agent.request(acp.methods.agent.initialize, { protocolVersion: 1 })
      await expect(
        second.agent.request(acp.methods.agent.session.load, { sessionId: 'nope', cwd: home, mcpServers: [] }),
      ).rejects.toMatchObject({ code: -32002 })
      const loaded = await second.agent.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: home,
        mcpServers: [],
      })
      // The session keeps the preset it was created with (the default), offered as its current mode.
      expect(loaded.modes?.currentModeId).toBe('code')
      expect(loaded.modes?.availableModes.map((mode) => mode.id)).toEqual(['ask', 'code', 'minimal', 'plan', 'review'])
      await until(() => (second.updates.get(sessionId)?.length ?? 0) >= 11)
      const replay = second.updates.get(sessionId) ?? []
      expect(replay.map((u) => u.sessionUpdate)).toEqual([
        'user_message_chunk',
        'agent_thought_chunk',
        'tool_call',
        'tool_call',
        'tool_call',
        'plan',
        'tool_call_update',
        'tool_call_update',
        'tool_call_update',
        'agent_message_chunk',
        'available_commands_update',
      ])
      expect(replay[0]).toEqual({
        sessionUpdate: 'user_message_chunk',
        content: { type: 'text', text: 'write my notes' },
      })
      expect(replay.at(-2)).toEqual({
        sessionUpdate: 'agent_message_chunk',
        content: { type: 'text', text: 'Notes written.' },
      })
    } finally {
      second.proc.stdin.end()
      expect(await second.exited).toBe(0)
    }
    expect(second.stderr()).not.toMatch(/error/i)
  })
})
