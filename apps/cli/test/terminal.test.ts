// Persistent terminals as `dsh run` users get them (base bundle rows, real node-pty inside the bash
// sandbox, mock model server): a node REPL answers 1+2, a server started in a terminal is reached by
// curl from bash, and once dsh exits no process of the session is left.
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
let ws: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-term-home-'))
  ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-term-ws-')))
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(ws, { recursive: true, force: true })
})

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

/** Pids of live processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) pids.push(Number(entry))
    } catch {
      // exited meanwhile
    }
  }
  return pids
}

describe('terminals through dsh run', () => {
  it('a node REPL answers 1+2, a terminal server is curled from bash, nothing is left after the session', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000)
    const marker = `dsh-term-marker-${port}`
    const serverJs = `require('http').createServer((q, s) => s.end('hello from ${marker}')).listen(${port}, () => console.log('listening'))`
    server.enqueue(
      call('t1', 'terminal_open', { command: 'node', until: '> $', wait_ms: 30000 }),
      call('t2', 'terminal_write', { id: 'term-1', input: '1+2\n', until: '3', wait_ms: 30000 }),
      call('t3', 'terminal_open', { command: `node -e "${serverJs}" ${marker}`, until: 'listening', wait_ms: 30000 }),
      call('b1', 'bash', { command: `curl -s http://127.0.0.1:${port}/`, description: 'Reach the terminal server' }),
      completionResponse({ text: 'done' }),
    )
    const result = await runDsh(['run', 'try the terminal'], { home, cwd: ws, modelUrl: server.url })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    const results = new Map(
      eventData(durableEvents(home), 'tool/result').map((data) => [
        data.message.toolCallId,
        data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n'),
      ]),
    )
    expect(results.get('t1')).toMatch(/^\[term-1 running: node\]\nWelcome to Node\.js/)
    expect(results.get('t2')).toMatch(/^\[term-1 running: node\]\n1\+2\n3/)
    expect(results.get('t3')).toMatch(/^\[term-2 running: node -e .*\]\nlistening/)
    expect(results.get('b1')).toBe(`hello from ${marker}`)
    // dsh has exited: the REPL and the server went with the session.
    expect(processesWith(marker)).toEqual([])
  })
})
