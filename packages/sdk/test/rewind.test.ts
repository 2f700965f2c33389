// Rewind through the TypeScript SDK over `dsh rpc` (issue 32): two turns change a workspace with the
// write tool and bash; `rewindPoints` lists them with their files, `rewind(id, 2, { mode: 'files' })`
// puts the workspace back byte for byte (the test's own copy), a concurrent edit is a conflict that
// changes nothing, and a conversation rewind opens a fork whose next request has none of turn 2.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { DshClient } from '../src/index.js'

const cliPath = fileURLToPath(new URL('../../../apps/cli/bin/dsh.js', import.meta.url))

let home: string
let ws: string
let server: MockLlmServer

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-sdk-rewind-'))
  ws = mkdtempSync(join(tmpdir(), 'dsh-sdk-rewind-ws-'))
  server = await startMockLlmServer()
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

it('lists, rewinds files, refuses a conflict and forks the conversation', { timeout: 90_000 }, async () => {
  writeFileSync(join(ws, 'keep.txt'), 'keep\n')
  const dsh = new DshClient({
    cliPath,
    cwd: ws,
    env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
    closeStepMs: 5000,
  })
  dsh.onApproval(() => 'allowed-once')
  try {
    server.enqueue(call('w1', 'write', { path: 'notes.txt', content: 'one\n' }), completionResponse({ text: 'a' }))
    const first = await dsh.run('first')
    const sessionId = first.sessionId
    const afterOne = files(ws)
    server.enqueue(
      call('b1', 'bash', { command: "rm keep.txt && printf '\\000\\377' > data.bin && mv notes.txt moved.txt" }),
      completionResponse({ text: 'b' }),
    )
    await dsh.run('second', { sessionId })
    const afterTwo = files(ws)

    const points = await dsh.rewindPoints(sessionId)
    expect(points.map((point) => [point.number, point.text, point.changed])).toEqual([
      [1, 'first', 1],
      [2, 'second', 4],
    ])

    writeFileSync(join(ws, 'data.bin'), 'mine')
    const refused = await dsh.rewind(sessionId, 2, { mode: 'files' })
    expect(refused.files).toMatchObject({ ok: false, code: 'REWIND_CONFLICT', conflicts: ['data.bin'] })
    expect(readFileSync(join(ws, 'data.bin'), 'utf8')).toBe('mine')
    expect(files(ws)).toEqual({ ...afterTwo, 'data.bin': Buffer.from('mine').toString('base64') })

    const done = await dsh.rewind(sessionId, 2, { mode: 'files', overwrite: true })
    expect(done.files?.ok).toBe(true)
    expect(files(ws)).toEqual(afterOne)

    const fork = await dsh.rewind(sessionId, 2, { mode: 'conversation' })
    expect(fork.previousSessionId).toBe(sessionId)
    expect(fork.text).toBe('second')
    const before = server.requests.length
    server.enqueue(completionResponse({ text: 'c' }))
    await dsh.run('second, again', { sessionId: fork.sessionId })
    const body = JSON.stringify(server.requests[before]?.body.messages)
    expect(body).toContain('first')
    expect(body).toContain('second, again')
    expect(body).not.toContain('"second"')
  } finally {
    await dsh.close()
  }
})
