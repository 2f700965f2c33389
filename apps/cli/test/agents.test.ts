// Background runs and the view of every agent (issue 38): `dsh run --bg` returns with the session id
// and the run outlives its shell's whole process group; `dsh agents` lists foreground runs, rpc
// sessions waiting for input or for an approval, subagents, and background runs done, failed or
// interrupted, each with the state its durable log and its lease say.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, type MockResponse, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { bin, dshNode, runDsh, runDshSync, spawnDsh, startDsh } from './dsh-child.js'

let home: string
let ws: string
const servers: MockLlmServer[] = []
const cleanup: Array<() => void> = []

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-agents-home-'))
  ws = mkdtempSync(join(tmpdir(), 'dsh-agents-ws-'))
})
afterEach(async () => {
  for (const undo of cleanup.splice(0)) undo()
  for (const server of servers.splice(0)) await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(ws, { recursive: true, force: true })
})

async function server(...responses: MockResponse[]): Promise<MockLlmServer> {
  const started = await startMockLlmServer({ responses })
  servers.push(started)
  return started
}

function gate(): { open: () => void; until: Promise<void> } {
  let open!: () => void
  const until = new Promise<void>((done) => {
    open = done
  })
  return { open, until }
}

function held(until: Promise<unknown>, response: MockResponse): MockResponse {
  if (response.type !== 'sse') throw new Error('only SSE responses can wait')
  return { ...response, steps: [{ until }, ...response.steps] }
}

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

interface Row {
  sessionId: string
  kind: string
  state: string
  detail?: string
  cwd: string
  model?: string
  cost: string
  pid?: number
  parentSession?: string
}

function agents(): Row[] {
  const listed = runDshSync(['agents', '--json'], { home, cwd: ws })
  expect(listed.code, listed.stderr).toBe(0)
  return JSON.parse(listed.stdout) as Row[]
}

function backgroundRecord(id: string): { endedAt?: number; reason?: string; pid: number; log: string } | undefined {
  const file = join(home, 'background', `${id}.json`)
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = probe()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((done) => setTimeout(done, 100))
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('dsh run --bg', () => {
  it('returns with the session id, survives its shell process group being killed, and finishes', async () => {
    const release = gate()
    const model = await server(
      held(release.until, call('w1', 'write', { path: 'result.txt', content: 'written in the background\n' })),
      completionResponse({ text: 'all done' }),
    )
    // A shell in its own process group runs `dsh run --bg`, then lingers like a terminal would.
    const shell = spawn(
      'sh',
      ['-c', `"${dshNode}" "${bin}" run --bg --yes "write the result"; echo launcher-exit=$?; sleep 60`],
      {
        cwd: ws,
        env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: model.url },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    let err = ''
    shell.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
    })
    shell.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk
    })
    cleanup.push(() => {
      try {
        process.kill(-(shell.pid as number), 'SIGKILL')
      } catch {}
    })
    await until('the launcher to return', () => out.includes('launcher-exit='))
    expect(out, err).toContain('launcher-exit=0')
    const sessionId = out.split('\n')[0]?.trim() as string
    expect(sessionId).toMatch(/^[0-9a-z-]{8,}$/)
    const record = await until('the background record', () => backgroundRecord(sessionId))
    cleanup.push(() => {
      try {
        process.kill(record.pid, 'SIGKILL')
      } catch {}
    })
    await model.waitForRequests(1, 20_000)

    // The shell's whole group goes, as when a terminal closes; the background run is not in it.
    process.kill(-(shell.pid as number), 'SIGKILL')
    await until('the shell to die', () => !alive(shell.pid as number) || undefined)
    expect(alive(record.pid)).toBe(true)
    const running = agents().find((row) => row.sessionId === sessionId)
    expect(running).toMatchObject({ kind: 'background', state: 'running' })

    release.open()
    const ended = await until('the background run to end', () => backgroundRecord(sessionId)?.endedAt && backgroundRecord(sessionId))
    expect(ended.reason).toBe('completed')
    expect(readFileSync(join(ws, 'result.txt'), 'utf8')).toBe('written in the background\n')
    const log = readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
    expect(log).toContain('all done')
    expect(agents().find((row) => row.sessionId === sessionId)).toMatchObject({ kind: 'background', state: 'done' })
  }, 60_000)

  it('refuses a task from stdin, and a run that cannot start says why from its log', async () => {
    const stdin = await runDsh(['run', '--bg', '-'], { home, cwd: ws })
    expect(stdin.code).not.toBe(0)
    expect(stdin.stderr).toContain('cannot read its task from stdin')
    const bad = await runDsh(['--profile', 'nosuch', 'run', '--bg', 'x'], { home, cwd: ws })
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toContain('nosuch')
    expect(bad.stderr).toContain('the background run ended before it started a session')
  })
})
