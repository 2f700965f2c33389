// dsh presets are the ACP session modes, driven by the ACP SDK's own client: `session/new` advertises
// them, `session/set_mode` switches an empty session (the next request has the preset's tools), and is
// refused once the session has had a prompt.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as acp from '@agentclientprotocol/sdk'
import { completionResponse, type MockLlmServer, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { call, durableEvents, editor, until } from './editor.js'

const toolsFixture = fileURLToPath(new URL('../rpc/fixtures/test-tools.mjs', import.meta.url))
let home: string
let server: MockLlmServer

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-acp-modes-'))
  server = await startMockLlmServer()
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

const toolNames = (request: RecordedRequest) =>
  ((request.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((tool) => tool.function.name)

it('advertises presets as modes, switches before the first prompt and refuses after it', {
  timeout: 90_000,
}, async () => {
  const patch = join(home, 'tools.yml')
  writeFileSync(patch, `- id: test-tools\n  use: ${JSON.stringify(toolsFixture)}\n`)
  const client = editor({ home, modelUrl: server.url, patch })
  try {
    await client.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION })
    const created = await client.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] })
    expect(created.modes?.currentModeId).toBe('code')
    expect(created.modes?.availableModes.map((mode) => mode.id)).toEqual(['ask', 'code', 'minimal', 'plan', 'review'])
    expect(created.modes?.availableModes.find((mode) => mode.id === 'plan')?.description).toMatch(/plan/)
    const { sessionId } = created

    await expect(
      client.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'nope' }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('no preset "nope"') })
    expect(await client.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'plan' })).toEqual({})
    await until(() =>
      (client.updates.get(sessionId) ?? []).some(
        (update) => update.sessionUpdate === 'current_mode_update' && update.currentModeId === 'plan',
      ),
    )

    const target = join(home, 'forced.txt')
    server.enqueue(
      completionResponse({ toolCalls: [call('w1', 'write_file', { path: target, content: 'x' })] }),
      completionResponse({ text: 'Here is the plan.' }),
    )
    const prompted = await client.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'plan the work' }],
    })
    expect(prompted.stopReason).toBe('end_turn')
    const offered = toolNames(server.requests.at(-2) as RecordedRequest)
    expect(offered).toContain('read')
    expect(offered).not.toContain('write_file')
    expect(offered).not.toContain('bash')
    expect(existsSync(target)).toBe(false)

    await expect(
      client.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: 'code' }),
    ).rejects.toMatchObject({
      code: -32600,
      message: expect.stringContaining('runs with preset "plan" and already has turns'),
    })
    const log = durableEvents(home, sessionId)
    expect(log.filter((event) => event.type === 'preset/selected').map((event) => event.data.name)).toEqual([
      'code',
      'plan',
    ])
    expect(log.find((event) => event.type === 'tool/result')?.data.code).toBe('TOOL_NOT_ALLOWED')
  } finally {
    client.proc.stdin.end()
    await client.exited
  }
})
