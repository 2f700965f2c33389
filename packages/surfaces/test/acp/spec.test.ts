// ACP v1 as the schema words it, checked with the SDK's own client against the built `dsh acp` and
// dsh's real coding tools: absolute paths (live and replayed), titles that name what they act on, a
// permission request that names the grant and the reason, an editor's stdio MCP server for one
// session only, session/list and session/close, and -32602 for invalid params.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as acp from '@agentclientprotocol/sdk'
import { completionResponse, isAlive, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, durableEvents, type Editor, editor, until, untilStop } from './editor.js'

const calcServer = fileURLToPath(new URL('./fixtures/calc-mcp-server.mjs', import.meta.url))

let home: string
let server: MockLlmServer
let patch: string

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-acp-spec-'))
  server = await startMockLlmServer()
  patch = join(home, 'rows.yml')
  writeFileSync(patch, '[]\n')
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

/** Every path a batch of updates hands the editor: tool-call locations and diff paths. */
function pathsIn(updates: readonly acp.SessionUpdate[]): string[] {
  return updates.flatMap((update) => {
    if (update.sessionUpdate !== 'tool_call' && update.sessionUpdate !== 'tool_call_update') return []
    const diffs = (update.content ?? []).flatMap((item) => (item.type === 'diff' ? [item.path] : []))
    return [...(update.locations ?? []).map((location) => location.path), ...diffs]
  })
}

const titles = (updates: readonly acp.SessionUpdate[]) =>
  updates.flatMap((update) => (update.sessionUpdate === 'tool_call' ? [[update.toolCallId, update.title]] : []))

const toolNames = (index: number): string[] =>
  (server.requests[index]?.body?.tools ?? []).map((tool: { function: { name: string } }) => tool.function.name)

describe('dsh acp against the ACP v1 schema', { timeout: 90_000 }, () => {
  let first: Editor
  let editedSession: string
  const script = () => join(home, 'add.js')

  beforeAll(async () => {
    first = editor({ home, modelUrl: server.url, patch })
    await first.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION })
  })
  afterAll(async () => {
    first.proc.stdin.end()
    await first.exited
  }, 60_000)

  it('hands out absolute paths and titles naming the file or command; the permission names grant and reason', async () => {
    const reason = 'node must run outside the sandbox to print the sum'
    server.enqueue(
      completionResponse({ toolCalls: [call('c-write', 'write', { path: 'add.js', content: 'console.log(2+3)\n' })] }),
      completionResponse({
        toolCalls: [
          call('c-read', 'read', { path: 'add.js' }),
          call('c-edit', 'edit', { path: 'add.js', old_string: '2+3', new_string: '2 + 3' }),
          call('c-run', 'bash', {
            command: 'node add.js',
            sandbox_permissions: 'danger-full-access',
            justification: reason,
          }),
        ],
      }),
      completionResponse({ text: 'It prints 5.' }),
    )
    const session = await first.agent.buildSession(home).start()
    editedSession = session.sessionId
    void session.prompt('write, check and run add.js')
    const { updates, stopReason } = await untilStop(session)
    session.dispose()
    expect(stopReason).toBe('end_turn')
    expect(readFileSync(script(), 'utf8')).toBe('console.log(2 + 3)\n')

    const paths = pathsIn(updates)
    expect(paths.length).toBeGreaterThanOrEqual(5)
    expect(paths.every((path) => path === script())).toBe(true)
    expect(titles(updates)).toEqual([
      ['c-write', 'Write add.js'],
      ['c-read', 'Read add.js'],
      ['c-edit', 'Edit add.js'],
      ['c-run', 'Run `node add.js`'],
    ])

    expect(first.permissions).toHaveLength(1)
    const [asked] = first.permissions
    expect(asked?.toolCall).toMatchObject({
      toolCallId: 'c-run',
      title: expect.stringContaining('(workspace-write -> danger-full-access)'),
    })
    const said = (asked?.toolCall.content ?? []).flatMap((item) =>
      item.type === 'content' && item.content.type === 'text' ? [item.content.text] : [],
    )
    expect(said.join('\n')).toContain('Grants danger-full-access for this one call')
    expect(said.join('\n')).toContain(`Reason: ${reason}`)
    // The grant was real: the approved run printed the sum, as the durable log records.
    const run = durableEvents(home, editedSession).find(
      (event) => event.type === 'tool/result' && (event.data.message as { toolCallId: string }).toolCallId === 'c-run',
    )
    expect(JSON.stringify(run?.data)).toContain('5')
  })

  it('connects an editor stdio MCP server for that session only, calls its tool, and stops it on session/close', async () => {
    const pidFile = join(home, 'calc.pid')
    server.enqueue(
      completionResponse({ toolCalls: [call('c-add', 'mcp__calc__add', { a: 2, b: 3 })] }),
      completionResponse({ text: 'Five.' }),
    )
    const requests = server.requests.length
    const session = await first.agent
      .buildSession({
        cwd: home,
        mcpServers: [{ name: 'calc', command: process.execPath, args: [calcServer, pidFile], env: [] }],
      })
      .start()
    expect(Number(readFileSync(pidFile, 'utf8'))).toBeGreaterThan(0)
    await expect(session.prompt('add 2 and 3')).resolves.toEqual({ stopReason: 'end_turn' })
    expect(toolNames(requests)).toContain('mcp__calc__add')
    const result = durableEvents(home, session.sessionId).find((event) => event.type === 'tool/result')
    expect(result?.data.message).toMatchObject({
      toolCallId: 'c-add',
      isError: false,
      content: [{ type: 'text', text: '2 + 3 = 5' }],
    })

    // Another session of the same connection does not see it.
    server.enqueue(completionResponse({ text: 'No tools here.' }))
    const other = await first.agent.buildSession(home).start()
    await expect(other.prompt('which tools?')).resolves.toEqual({ stopReason: 'end_turn' })
    expect(toolNames(server.requests.length - 1)).not.toContain('mcp__calc__add')
    expect(toolNames(server.requests.length - 1)).toContain('read')
    other.dispose()

    const pid = Number(readFileSync(pidFile, 'utf8'))
    expect(isAlive(pid)).toBe(true)
    await expect(
      first.agent.request(acp.methods.agent.session.close, { sessionId: session.sessionId }),
    ).resolves.toEqual({})
    session.dispose()
    await until(() => !isAlive(pid))
    await expect(
      first.agent.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: 'text', text: 'still there?' }],
      }),
    ).rejects.toMatchObject({ code: -32002 })
  })

  it('lists sessions (all, by cwd, paged by an opaque cursor)', async () => {
    const all = await first.agent.request(acp.methods.agent.session.list, {})
    const ids = all.sessions.map((info) => info.sessionId)
    expect(ids).toContain(editedSession)
    expect(all.sessions.find((info) => info.sessionId === editedSession)).toMatchObject({
      cwd: home,
      title: expect.stringContaining('add.js'),
      updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    })
    const mine = await first.agent.request(acp.methods.agent.session.list, { cwd: home })
    expect(mine.sessions.map((info) => info.sessionId)).toEqual(ids)
    const elsewhere = await first.agent.request(acp.methods.agent.session.list, { cwd: join(home, 'elsewhere') })
    expect(elsewhere.sessions).toEqual([])
  })

  it('answers invalid params with -32602 and says what to send', async () => {
    const invalid = { code: -32602 }
    const agent = first.agent
    const load = (sessionId: string) =>
      agent.request(acp.methods.agent.session.load, { sessionId, cwd: home, mcpServers: [] })
    await expect(load('../../etc/passwd')).rejects.toMatchObject(invalid)
    await expect(
      agent.request(acp.methods.agent.session.prompt, { sessionId: '../x', prompt: [{ type: 'text', text: 'hi' }] }),
    ).rejects.toMatchObject(invalid)
    await expect(agent.request(acp.methods.agent.session.close, { sessionId: 'a/b' })).rejects.toMatchObject(invalid)
    await expect(agent.request(acp.methods.agent.session.list, { cursor: 'page-two' })).rejects.toMatchObject(invalid)
    await expect(agent.request(acp.methods.agent.session.list, { cwd: 'relative' })).rejects.toMatchObject(invalid)
    await expect(
      agent.request(acp.methods.agent.session.new, {
        cwd: home,
        mcpServers: [{ type: 'sse', name: 'old', url: 'http://127.0.0.1:9/sse', headers: [] }],
      }),
    ).rejects.toMatchObject({ ...invalid, message: expect.stringContaining('use http or stdio') })
    await expect(
      agent.request(acp.methods.agent.session.new, {
        cwd: home,
        mcpServers: [{ name: 'empty', command: '', args: [], env: [] }],
      }),
    ).rejects.toMatchObject({ ...invalid, message: expect.stringContaining('command must be') })
    expect(existsSync(join(home, 'etc'))).toBe(false)
  })

  it('replays the same absolute paths and titles after session/load in a new process', async () => {
    first.proc.stdin.end()
    expect(await first.exited).toBe(0)
    const second = editor({ home, modelUrl: server.url, patch })
    try {
      await second.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION })
      await second.agent.request(acp.methods.agent.session.load, {
        sessionId: editedSession,
        cwd: home,
        mcpServers: [],
      })
      await until(() =>
        (second.updates.get(editedSession) ?? []).some((u) => u.sessionUpdate === 'agent_message_chunk'),
      )
      const replay = second.updates.get(editedSession) ?? []
      const paths = pathsIn(replay)
      expect(paths.length).toBeGreaterThanOrEqual(5)
      expect(paths.every((path) => isAbsolute(path) && path === script())).toBe(true)
      expect(titles(replay).map(([, title]) => title)).toEqual([
        'Write add.js',
        'Read add.js',
        'Edit add.js',
        'Run `node add.js`',
      ])
    } finally {
      second.proc.stdin.end()
      expect(await second.exited).toBe(0)
    }
  })
})
