// The JSON-RPC endpoint in process: framing across chunks, every error class, and that no input
// stops it. (The server over the built CLI is tested in apps/cli/test/rpc.test.ts and packages/sdk.)
import { PassThrough } from 'node:stream'
import { HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { JsonRpcEndpoint, RpcError, requireString } from '../../src/rpc/jsonrpc.js'

function endpoint(maxLineBytes?: number) {
  const input = new PassThrough()
  const output = new PassThrough()
  const lines: unknown[] = []
  let buffer = ''
  output.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk
    const parts = buffer.split('\n')
    buffer = parts.pop() ?? ''
    for (const part of parts) lines.push(JSON.parse(part))
  })
  let ended = 0
  const rpc = new JsonRpcEndpoint({
    input,
    output,
    maxLineBytes,
    onEnd: () => {
      ended++
    },
    handlers: {
      echo: (params) => ({ said: requireString(params, 'text') }),
      refuse: () => {
        throw RpcError.refused('NOPE', 'not today', { why: 'test' })
      },
      harness: () => {
        throw new HarnessError('SESSION_NOT_FOUND', 'no session x', { id: 'x' })
      },
      crash: () => {
        throw new TypeError('boom')
      },
      slow: () => new Promise((resolve) => setTimeout(() => resolve({ late: true }), 30)),
    },
  })
  const settle = () => new Promise((resolve) => setTimeout(resolve, 60))
  return { input, rpc, lines, settle, ended: () => ended }
}

describe('JsonRpcEndpoint', () => {
  it('frames messages split across chunks and CRLF line ends', async () => {
    const { input, lines, settle } = endpoint()
    input.write('{"jsonrpc":"2.0","id":1,"meth')
    input.write(
      'od":"echo","params":{"text":"hi"}}\r\n{"jsonrpc":"2.0","id":2,"method":"echo","params":{"text":"yo"}}\n',
    )
    await settle()
    expect(lines).toEqual([
      { jsonrpc: '2.0', id: 1, result: { said: 'hi' } },
      { jsonrpc: '2.0', id: 2, result: { said: 'yo' } },
    ])
  })

  it('answers each kind of bad input with its JSON-RPC error and keeps going', async () => {
    const { input, lines, settle, rpc } = endpoint(90)
    input.write('nope\n')
    input.write('42\n')
    input.write('{"jsonrpc":"2.0","id":{"x":1},"method":"echo"}\n')
    input.write('{"jsonrpc":"2.0","id":3,"method":"echo","params":{}}\n')
    input.write('{"jsonrpc":"2.0","id":4,"method":"refuse"}\n')
    input.write('{"jsonrpc":"2.0","id":5,"method":"harness"}\n')
    input.write('{"jsonrpc":"2.0","id":6,"method":"crash"}\n')
    input.write('{"jsonrpc":"2.0","method":"crash"}\n')
    input.write('{"jsonrpc":"2.0","id":7,"result":{}}\n')
    input.write(`{"jsonrpc":"2.0","id":8,"method":"echo","params":{"text":"${'x'.repeat(200)}"}}\n`)
    input.write('{"jsonrpc":"2.0","id":9,"method":"echo","params":{"text":"still here"}}\n')
    input.write(`{"jsonrpc":"2.0","id":10,"method":"echo","params":{"text":"${'y'.repeat(200)}`)
    input.write('"}}\n{"jsonrpc":"2.0","id":11,"method":"echo","params":{"text":"after"}}\n')
    await settle()
    await rpc.drained()
    const byId = new Map((lines as Array<{ id: unknown }>).map((line) => [line.id, line]))
    const anonymous = (lines as Array<{ id: unknown; error: { code: number } }>).filter((line) => line.id === null)
    expect(anonymous.map((line) => line.error.code)).toEqual([-32700, -32600, -32600, -32600, -32600])
    expect(byId.get(3)).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32602, message: '"text" must be a non-empty string', data: { code: 'INVALID_PARAMS' } },
    })
    expect(byId.get(4)).toEqual({
      jsonrpc: '2.0',
      id: 4,
      error: { code: -32000, message: 'not today', data: { code: 'NOPE', facts: { why: 'test' } } },
    })
    expect(byId.get(5)).toEqual({
      jsonrpc: '2.0',
      id: 5,
      error: { code: -32000, message: 'no session x', data: { code: 'SESSION_NOT_FOUND', facts: { id: 'x' } } },
    })
    expect(byId.get(6)).toEqual({
      jsonrpc: '2.0',
      id: 6,
      error: { code: -32603, message: 'internal error: boom', data: { code: 'INTERNAL' } },
    })
    // Responses are ignored, notifications never answered, over-long lines refused whole.
    expect([7, 8, 10].map((id) => byId.has(id))).toEqual([false, false, false])
    expect(byId.get(9)).toEqual({ jsonrpc: '2.0', id: 9, result: { said: 'still here' } })
    expect(byId.get(11)).toEqual({ jsonrpc: '2.0', id: 11, result: { said: 'after' } })
    expect(lines).toHaveLength(11)
  })

  it('refuses a 32 MiB line as soon as it passes the limit, without holding it, and answers the next request', async () => {
    const { input, lines, settle } = endpoint(1024 * 1024)
    const chunk = 'x'.repeat(64 * 1024)
    // Half of the line is written: the refusal must already be out (the line is never held whole).
    for (let i = 0; i < 256; i++) input.write(chunk)
    await settle()
    expect(lines).toEqual([
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600, data: { code: 'INVALID_REQUEST' } }) },
    ])
    for (let i = 0; i < 256; i++) input.write(chunk)
    input.write('\n{"jsonrpc":"2.0","id":9,"method":"echo","params":{"text":"after"}}\n')
    await settle()
    expect(lines.slice(1)).toEqual([{ jsonrpc: '2.0', id: 9, result: { said: 'after' } }])
  })

  it('drains in-flight requests and reports the end of input once', async () => {
    const { input, rpc, lines, ended } = endpoint()
    input.write('{"jsonrpc":"2.0","id":1,"method":"slow"}\n')
    input.end()
    await new Promise((resolve) => setTimeout(resolve, 5))
    await rpc.drained()
    expect(lines).toEqual([{ jsonrpc: '2.0', id: 1, result: { late: true } }])
    expect(ended()).toBe(1)
  })
})
