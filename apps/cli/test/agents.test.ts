// Background runs and the view of every agent (issue 38): `dsh run --bg` returns with the session id
// and the run outlives its shell's whole process group; `dsh agents` lists foreground runs, rpc
// sessions waiting for input or for an approval, subagents, and background runs done, failed or
// interrupted, each with the state its durable log and its lease say.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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
    const ended = await until('the background run to end', () => {
      const record = backgroundRecord(sessionId)
      return record?.endedAt ? record : undefined
    })
    expect(ended.reason).toBe('completed')
    expect(readFileSync(join(ws, 'result.txt'), 'utf8')).toBe('written in the background\n')
    const log = readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
    expect(log).toContain('all done')
    expect(agents().find((row) => row.sessionId === sessionId)).toMatchObject({ kind: 'background', state: 'done' })
    // Attaching to a run that ended prints its transcript and says it is over.
    const attached = await runDsh(['attach', sessionId.slice(0, 8)], { home, cwd: ws })
    expect(attached.code, attached.stderr).toBe(0)
    expect(attached.stdout).toContain('all done')
    expect(attached.stderr).toContain('is not running; this is its whole transcript')
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

/** `dsh rpc` as a client drives it: one JSON-RPC request at a time, notifications kept. */
function rpcClient(modelUrl: string) {
  const proc = spawnDsh(['rpc'], { home, cwd: ws, modelUrl })
  const lines: Array<Record<string, unknown>> = []
  let buffer = ''
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk
    const parts = buffer.split('\n')
    buffer = parts.pop() ?? ''
    for (const part of parts) lines.push(JSON.parse(part))
  })
  let next = 1
  return {
    proc,
    lines,
    async call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
      const id = next++
      proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
      const reply = await until(`the reply to ${method}`, () => lines.find((line) => line.id === id))
      if (reply.error) throw new Error(JSON.stringify(reply.error))
      return reply.result as Record<string, unknown>
    },
  }
}

describe('dsh agents', () => {
  it('lists foreground, rpc, child and background sessions with the state each is in', async () => {
    const dirs = {
      fg: join(ws, 'fg'),
      parent: join(ws, 'parent'),
      idle: join(ws, 'idle'),
      asks: join(ws, 'asks'),
      failed: join(ws, 'failed'),
      killed: join(ws, 'killed'),
    }
    for (const dir of Object.values(dirs)) mkdirSync(dir)
    const hold = gate()
    cleanup.push(hold.open)

    // A foreground run whose model is still answering.
    const fgModel = await server(held(hold.until, completionResponse({ text: 'late' })))
    const fg = startDsh(['run', 'think'], { home, cwd: dirs.fg, modelUrl: fgModel.url })
    cleanup.push(() => fg.proc.kill('SIGKILL'))
    // A parent whose subagent is working.
    const parentModel = await server(
      call('t1', 'task', { prompt: 'look around', description: 'look' }),
      held(hold.until, completionResponse({ text: 'child done' })),
    )
    const parent = startDsh(['run', 'delegate'], { home, cwd: dirs.parent, modelUrl: parentModel.url })
    cleanup.push(() => parent.proc.kill('SIGKILL'))
    // An rpc client with one idle session and one whose write outside the workspace waits for approval.
    const rpcModel = await server(
      call('b1', 'bash', {
        command: 'true',
        sandbox_permissions: 'danger-full-access',
        justification: 'the test needs an approval to wait on',
      }),
    )
    const rpc = rpcClient(rpcModel.url)
    cleanup.push(() => rpc.proc.kill('SIGKILL'))
    await rpc.call('initialize', {})
    const idle = (await rpc.call('session/create', { cwd: dirs.idle })).sessionId as string
    const asks = (await rpc.call('session/create', { cwd: dirs.asks })).sessionId as string
    await rpc.call('prompt', { sessionId: asks, text: 'write outside' })
    await until('the approval request', () => rpc.lines.find((line) => line.method === 'approval/requested'))
    // Background runs: one that failed, one whose process was killed.
    const failingModel = await server({ type: 'json', status: 400, body: { error: { message: 'bad request' } } })
    const failed = await runDsh(['run', '--bg', 'fail'], { home, cwd: dirs.failed, modelUrl: failingModel.url })
    expect(failed.code, failed.stderr).toBe(0)
    const failedId = failed.stdout.trim()
    await until('the failed run to end', () => backgroundRecord(failedId)?.endedAt)
    const killedModel = await server({ type: 'hang' })
    const killed = await runDsh(['run', '--bg', 'hang'], { home, cwd: dirs.killed, modelUrl: killedModel.url })
    const killedId = killed.stdout.trim()
    await killedModel.waitForRequests(1, 20_000)
    process.kill((backgroundRecord(killedId) as { pid: number }).pid, 'SIGKILL')
    await until('the killed run to die', () => !alive((backgroundRecord(killedId) as { pid: number }).pid) || undefined)
    await fgModel.waitForRequests(1, 20_000)
    await parentModel.waitForRequests(2, 20_000)

    const rows = agents()
    const at = (dir: string) => rows.filter((row) => row.cwd === dir)
    expect(at(dirs.fg)).toMatchObject([
      { kind: 'foreground', state: 'running', model: expect.stringContaining('deepseek') },
    ])
    expect(
      at(dirs.parent)
        .map((row) => [row.kind, row.state])
        .sort(),
    ).toEqual([
      ['child', 'running'],
      ['foreground', 'running'],
    ])
    const child = at(dirs.parent).find((row) => row.kind === 'child')
    expect(child?.parentSession).toBe(at(dirs.parent).find((row) => row.kind === 'foreground')?.sessionId)
    expect(rows.find((row) => row.sessionId === idle)).toMatchObject({ kind: 'foreground', state: 'waiting for input' })
    expect(rows.find((row) => row.sessionId === asks)).toMatchObject({
      kind: 'foreground',
      state: 'waiting for approval',
      detail: 'bash',
    })
    expect(rows.find((row) => row.sessionId === failedId)).toMatchObject({ kind: 'background', state: 'failed' })
    expect(rows.find((row) => row.sessionId === killedId)).toMatchObject({ kind: 'background', state: 'interrupted' })

    // /agents in a session (here over rpc's command/run) is the same listing.
    const slash = await rpc.call('command/run', { sessionId: idle, line: '/agents' })
    expect(slash.ok).toBe(true)
    expect(slash.text).toContain('waiting for approval')
    const { data: listed } = slash as { data: { agents: Row[] } }
    expect(listed.agents.map((row) => row.sessionId).sort()).toEqual(rows.map((row) => row.sessionId).sort())

    // The table says the same to a person.
    const table = await runDsh(['agents'], { home, cwd: ws })
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toContain('waiting for approval')
    expect(table.stdout).toContain(killedId.slice(0, 12))

    // Stopping the foreground run: SIGTERM to its owner, which ends and saves it.
    const stop = await runDsh(['agents', 'stop', (at(dirs.fg)[0] as Row).sessionId], { home, cwd: ws })
    expect(stop.code, stop.stderr).toBe(0)
    const fgExit = await fg.exited
    expect(fgExit.code).not.toBe(0)
    expect(agents().find((row) => row.cwd === dirs.fg)).toBeUndefined()
  }, 90_000)
})

describe('notify.command', () => {
  it('is not run for an approval a headless run answers at once (nobody is waiting)', async () => {
    const notes = join(home, 'notes.jsonl')
    writeFileSync(join(home, 'settings.yaml'), `notify.command: cat >> ${notes}\nnotify.minTurnSeconds: 0\n`)
    const model = await server(
      call('b1', 'bash', {
        command: 'true',
        sandbox_permissions: 'danger-full-access',
        justification: 'the test needs an approval',
      }),
      completionResponse({ text: 'could not' }),
    )
    const result = await runDsh(['run', 'try it'], { home, cwd: ws, modelUrl: model.url })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain('nobody could give it')
    // Past the moment an approval must wait before it notifies, only the turn's end was heard.
    await new Promise((done) => setTimeout(done, 1500))
    const kinds = readFileSync(notes, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).kind)
    expect(kinds).toEqual(['done'])
  }, 30_000)
})
