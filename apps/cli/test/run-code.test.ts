// Code mode as `dsh run` users get it (base bundle row, mock model server): one run_code call makes ten
// read/grep calls through the tool pipeline, each logged with the parent's call id, and the model gets
// one result; an inner call that needs approval asks exactly once.
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type {} from '@dsh/coding-tools/code-mode'
import { eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
let ws: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-code-home-'))
  ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-code-ws-')))
  for (let i = 1; i <= 5; i++) writeFileSync(join(ws, `f${i}.txt`), `file ${i}\nneedle ${i}\n`)
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(ws, { recursive: true, force: true })
})

const runCode = (id: string, code: string) =>
  completionResponse({ toolCalls: [{ id, name: 'run_code', arguments: JSON.stringify({ code }) }] })

/** The text of the last tool message of a recorded request. */
function lastToolText(index: number): string {
  const messages = server.requests[index]?.body.messages as Array<{ role: string; content: unknown }>
  return String(messages.filter((message) => message.role === 'tool').at(-1)?.content ?? '')
}

describe('run_code through dsh run', () => {
  it('ten read and grep calls are logged with the parent id; the model reads one result', async () => {
    const code = [
      'const out = []',
      'for (let i = 1; i <= 5; i++) {',
      "  const text = await tools.read({ path: 'f' + i + '.txt' })",
      "  const hit = await tools.grep({ pattern: 'needle ' + i, path: 'f' + i + '.txt' })",
      "  out.push(text.includes('file ' + i) && hit.includes('needle ' + i))",
      '}',
      'console.log("checked", out.length)',
      'return out',
    ].join('\n')
    server.enqueue(runCode('p1', code), completionResponse({ text: 'done' }))
    const result = await runDsh(['run', 'check the files'], { home, cwd: ws, modelUrl: server.url })
    expect(result.code).toBe(0)
    const events = durableEvents(home)
    const nested = eventData(events, 'tool/nested-call')
    expect(nested.map((data) => [data.parentCallId, data.call.name])).toEqual(
      Array.from({ length: 10 }, (_, i) => ['p1', i % 2 === 0 ? 'read' : 'grep']),
    )
    expect(eventData(events, 'tool/nested-result').map((data) => [data.parentCallId, data.message.isError])).toEqual(
      Array.from({ length: 10 }, () => ['p1', false]),
    )
    // One model-visible result for the parent, carrying the program's value.
    expect(eventData(events, 'tool/result').map((data) => data.message.toolCallId)).toEqual(['p1'])
    expect(lastToolText(1)).toBe(
      '[console]\nchecked 5\n[\n  true,\n  true,\n  true,\n  true,\n  true\n]\n[run_code: 10 tool calls]',
    )
  })

  it('an inner call that needs approval asks once; the program has no ambient authority', async () => {
    const code = [
      "await tools.write({ path: 'big.txt', content: 'x'.repeat(64) })",
      'const escapes = [typeof require, typeof process, typeof fetch, typeof setTimeout]',
      "let viaConstructor = 'blocked'",
      "try { viaConstructor = typeof tools.read.constructor('return process')() } catch (e) { viaConstructor = 'blocked' }",
      'return { escapes, viaConstructor }',
    ].join('\n')
    server.enqueue(runCode('p1', code), completionResponse({ text: 'done' }))
    const patch = join(home, 'small-writes.yml')
    writeFileSync(
      patch,
      '- id: guard-large-write\n  use: "@dsh/agent/guards/large-write"\n  config: { maxBytes: 10 }\n',
    )
    const result = await runDsh(['--patch', patch, 'run', '--yes', 'write it'], { home, cwd: ws, modelUrl: server.url })
    expect(result.code).toBe(0)
    const events = durableEvents(home)
    expect(eventData(events, 'approval/asked').map((data) => data.toolCallId)).toEqual(['p1.1'])
    expect(readFileSync(join(ws, 'big.txt'), 'utf8')).toBe('x'.repeat(64))
    expect(JSON.parse(lastToolText(1).split('\n[run_code')[0] as string)).toEqual({
      escapes: ['undefined', 'undefined', 'undefined', 'undefined'],
      viaConstructor: 'blocked',
    })
  })
})
