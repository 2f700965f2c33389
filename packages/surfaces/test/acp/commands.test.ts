// The slash commands reach the editor (issue 31): after `session/new` and after `session/load`, `dsh
// acp` sends `available_commands_update` with each command's name, one-line description and argument
// hint, as the ACP SDK's own client receives it; the commands that act on a terminal or page
// (`/exit`, `/new`...) are left out, the editor has its own controls for those. A turn ends with a
// `usage_update` (issue 33).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as acp from '@agentclientprotocol/sdk'
import { completionResponse, deepseekUsage, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type Editor, editor, until } from './editor.js'

let home: string
let server: MockLlmServer
let patch: string

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-acp-commands-'))
  server = await startMockLlmServer()
  patch = join(home, 'none.yml')
  writeFileSync(patch, '[]\n')
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

/** The commands of the last `available_commands_update` the editor got for `sessionId`. */
async function announced(client: Editor, sessionId: string): Promise<acp.AvailableCommand[]> {
  const find = () =>
    (client.updates.get(sessionId) ?? []).findLast((update) => update.sessionUpdate === 'available_commands_update')
  await until(() => find() !== undefined)
  const update = find()
  return update?.sessionUpdate === 'available_commands_update' ? update.availableCommands : []
}

function checkCommands(commands: acp.AvailableCommand[]) {
  const names = commands.map((command) => command.name)
  expect(names).toEqual(expect.arrayContaining(['help', 'model', 'compact', 'status', 'diff', 'init', 'mcp']))
  for (const surfaceOnly of ['exit', 'quit', 'clear', 'new']) expect(names).not.toContain(surfaceOnly)
  expect(commands.find((command) => command.name === 'model')).toEqual({
    name: 'model',
    description: expect.stringMatching(/model/),
    input: { hint: '[provider:model | model]' },
  })
  for (const command of commands) expect(command.description.trim()).not.toBe('')
}

it('announces the slash commands after session/new and after session/load', { timeout: 90_000 }, async () => {
  const first = editor({ home, modelUrl: server.url, patch })
  let sessionId: string
  try {
    await first.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION })
    sessionId = (await first.agent.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] })).sessionId
    checkCommands(await announced(first, sessionId))
    // A turn, so the session is durable and can be loaded by another connection.
    server.enqueue(completionResponse({ text: 'Hello.', usage: deepseekUsage(1500, 300, 0, 0) }))
    const prompted = await first.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'hi' }],
    })
    expect(prompted.stopReason).toBe('end_turn')
    // After the turn: how full the context is (the answer's usage) of the model's window; no cost
    // without a known price (the catalog has none for this model).
    const usage = (first.updates.get(sessionId) ?? []).findLast((update) => update.sessionUpdate === 'usage_update')
    expect(usage).toMatchObject({ sessionUpdate: 'usage_update', used: 1800, size: expect.any(Number) })
    expect(usage).not.toHaveProperty('cost')
  } finally {
    first.proc.stdin.end()
    await first.exited
  }
  const second = editor({ home, modelUrl: server.url, patch })
  try {
    await second.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION })
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: home, mcpServers: [] })
    checkCommands(await announced(second, sessionId))
  } finally {
    second.proc.stdin.end()
    expect(await second.exited).toBe(0)
  }
})
