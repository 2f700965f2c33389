// `dsh rpc` on the wire: the built binary as a child process fed raw lines. Bad input of every kind is
// answered with a JSON-RPC error, the process keeps serving, and stdout carries protocol only.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { spawnDsh } from './dsh-child.js'

let home: string

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-rpc-'))
})
afterEach(() => {
  rmSync(home, { recursive: true, force: true })
})

function rpc() {
  const proc = spawnDsh(['rpc'], { home, modelUrl: 'http://127.0.0.1:9' })
  const lines: Array<Record<string, unknown>> = []
  const raw: string[] = []
  let buffer = ''
  let stderr = ''
  const waiters: Array<() => void> = []
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk
    const parts = buffer.split('\n')
    buffer = parts.pop() ?? ''
    for (const part of parts) {
      raw.push(part)
      lines.push(JSON.parse(part))
    }
    for (const wake of waiters.splice(0)) wake()
  })
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)))
  /** Resolves with the reply to `id`. */
  const reply = async (id: unknown): Promise<Record<string, unknown>> => {
    for (;;) {
      const found = lines.find((line) => line.id === id && ('result' in line || 'error' in line))
      if (found) return found
      await new Promise<void>((resolve) => waiters.push(resolve))
    }
  }
  return {
    proc,
    lines,
    raw,
    reply,
    exited,
    stderr: () => stderr,
    send: (line: string) => proc.stdin.write(`${line}\n`),
  }
}

// Each test boots real processes; the machine may be loaded, so the budget is generous.
describe('dsh rpc on the wire', { timeout: 90_000 }, () => {
  it('refuses a 32 MiB line with -32600 and answers the request after it', async () => {
    const server = rpc()
    const chunk = 'y'.repeat(1024 * 1024)
    for (let i = 0; i < 32; i++) server.proc.stdin.write(chunk)
    server.send('')
    server.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
    expect((await server.reply(null)).error).toMatchObject({ code: -32600 })
    expect(await server.reply(1)).toMatchObject({ id: 1, result: expect.any(Object) })
    server.proc.stdin.end()
    expect(await server.exited).toBe(0)
  })

  it('answers malformed, unknown and invalid input with JSON-RPC errors and keeps serving', async () => {
    const server = rpc()
    server.send('garbage')
    server.send('{"jsonrpc":"2.0","id":1,')
    server.send('[{"jsonrpc":"2.0","id":2,"method":"initialize"}]')
    server.send('{"jsonrpc":"1.0","id":3,"method":"initialize"}')
    server.send('{"jsonrpc":"2.0","id":4,"method":"initialize","params":[1]}')
    server.send('{"jsonrpc":"2.0","id":5,"method":"frobnicate"}')
    server.send('{"jsonrpc":"2.0","method":"frobnicate"}')
    server.send('{"jsonrpc":"2.0","id":6,"method":"session/create","params":{}}')
    server.send('{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"cwd":"."}}')
    server.send('{"jsonrpc":"2.0","id":8,"method":"session/create","params":{"cwd":42}}')
    server.send('{"jsonrpc":"2.0","id":9,"method":"prompt","params":{"sessionId":"x"}}')
    server.send('{"jsonrpc":"2.0","id":10,"method":"session/list","params":{"cursor":"zz"}}')
    server.send('{"jsonrpc":"2.0","id":"s","method":"session/create","params":{}}')
    const created = await server.reply('s')
    const byId = (id: unknown) =>
      server.lines.find((line) => line.id === id) as { error?: { code: number; data?: { code: string } } }
    const nullErrors = server.lines
      .filter((line) => line.id === null)
      .map((line) => (line.error as { code: number }).code)
    expect(nullErrors).toEqual([-32700, -32700, -32600])
    expect(byId(3).error?.code).toBe(-32600)
    expect(byId(4).error?.code).toBe(-32602)
    expect(byId(5).error?.code).toBe(-32601)
    expect(byId(6).error).toMatchObject({ code: -32000, data: { code: 'NOT_INITIALIZED' } })
    // The model the profile's sessions use, resolved, not the empty routing the client sent.
    expect((await server.reply(7)).result).toMatchObject({
      protocolVersion: 1,
      cwd: home,
      model: { provider: 'deepseek', model: expect.stringMatching(/^deepseek-/) },
    })
    expect(byId(8).error?.code).toBe(-32602)
    expect(byId(9).error).toMatchObject({ code: -32602 })
    expect(byId(10).error?.code).toBe(-32602)
    expect(created.result).toMatchObject({ sessionId: expect.any(String), cwd: home })
    // Nothing answered the notification; every stdout line is a JSON-RPC 2.0 message.
    expect(server.lines.filter((line) => line.id === undefined && !('method' in line))).toEqual([])
    expect(server.lines.every((line) => line.jsonrpc === '2.0')).toBe(true)
    server.send('{"jsonrpc":"2.0","id":11,"method":"shutdown"}')
    expect((await server.reply(11)).result).toEqual({})
    expect(await server.exited).toBe(0)
    expect(server.raw.at(-1)).toBe('{"jsonrpc":"2.0","id":11,"result":{}}')
  })

  it('answers every request sent before stdin closed, disposes its agents, exits 0; SIGTERM exits 143', async () => {
    const eof = rpc()
    eof.send('{"jsonrpc":"2.0","id":1,"method":"initialize"}')
    eof.send('{"jsonrpc":"2.0","id":2,"method":"session/create"}')
    eof.send('{"jsonrpc":"2.0","id":3,"method":"shutdown"}')
    eof.proc.stdin.end()
    expect(await eof.exited).toBe(0)
    const created = (eof.lines.find((line) => line.id === 2) as { result: { sessionId: string } }).result
    expect(eof.lines.find((line) => line.id === 3)).toEqual({ jsonrpc: '2.0', id: 3, result: {} })
    const lifecycle = eof.lines.filter((line) => line.method === 'agent/lifecycle').map((line) => line.params)
    expect(lifecycle).toMatchObject([
      { type: 'created', sessionId: created.sessionId, root: true },
      { type: 'disposed', sessionId: created.sessionId, root: true },
    ])
    const term = rpc()
    term.send('{"jsonrpc":"2.0","id":1,"method":"initialize"}')
    await term.reply(1)
    term.proc.kill('SIGTERM')
    expect(await term.exited).toBe(143)
    expect(term.stderr()).toBe('')
  })
})
