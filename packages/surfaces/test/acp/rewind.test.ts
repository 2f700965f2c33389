// Rewind from an editor (issue 32), with the ACP SDK's own client: two turns change a workspace with
// the write tool and bash; `/rewind 1 files` puts it back byte for byte (compared with the test's own
// copy), `/redo` gives the changes back, and `/rewind 2 conversation` names a new session that
// `session/load` opens, holding the first turn only.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as acp from '@agentclientprotocol/sdk'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { editor } from './editor.js'

let home: string
let ws: string
let server: MockLlmServer
let patch: string

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-acp-rewind-'))
  ws = mkdtempSync(join(tmpdir(), 'dsh-acp-rewind-ws-'))
  server = await startMockLlmServer()
  patch = join(home, 'none.yml')
  writeFileSync(patch, '[]\n')
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(ws, { recursive: true, force: true })
})

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

const files = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((name) => [name, readFileSync(join(dir, name)).toString('base64')]),
  )

it('rewinds the files, gives them back, and names the conversation fork', { timeout: 90_000 }, async () => {
  writeFileSync(join(ws, 'keep.txt'), 'keep\n')
  const client = editor({ home, modelUrl: server.url, patch })
  const said: string[] = []
  try {
    await client.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION })
    const { sessionId } = await client.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] })
    const prompt = async (text: string) => {
      const before = (client.updates.get(sessionId) ?? []).length
      await client.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] })
      for (const update of (client.updates.get(sessionId) ?? []).slice(before))
        if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text')
          said.push(update.content.text)
    }
    server.enqueue(call('w1', 'write', { path: 'notes.txt', content: 'one\n' }), completionResponse({ text: 'a' }))
    await prompt('first')
    const afterOne = files(ws)
    server.enqueue(
      call('b1', 'bash', { command: "rm keep.txt && printf '\\000\\377' > data.bin && sed -i 's/one/two/' notes.txt" }),
      completionResponse({ text: 'b' }),
    )
    await prompt('second')
    const afterTwo = files(ws)
    expect(afterTwo).not.toEqual(afterOne)

    await prompt('/rewind 2 files')
    expect(files(ws)).toEqual(afterOne)
    await prompt('/redo')
    expect(files(ws)).toEqual(afterTwo)

    await prompt('/rewind 2 conversation')
    const named = said.join('\n').match(/is session ([0-9a-f-]{36})/)
    expect(named).not.toBeNull()
    const fork = named?.[1] as string
    expect(fork).not.toBe(sessionId)
    expect(files(ws)).toEqual(afterTwo)
    expect(existsSync(join(home, 'sessions', `${fork}.jsonl`))).toBe(true)
    await client.agent.request(acp.methods.agent.session.load, { sessionId: fork, cwd: ws, mcpServers: [] })
    const replayed = (client.updates.get(fork) ?? []).flatMap((update) =>
      update.sessionUpdate === 'user_message_chunk' && update.content.type === 'text' ? [update.content.text] : [],
    )
    expect(replayed).toEqual(['first'])
  } finally {
    client.proc.stdin.end()
    expect(await client.exited).toBe(0)
  }
})
