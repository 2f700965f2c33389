// `dsh replay` and `dsh test` as users run them (issue 37): a recorded coding session (bash and read,
// against the mock model) replays with no model and no divergence, touching neither the original
// session nor the workspace; a changed composition is reported at the first request it changes; a
// tool whose output changed fails `dsh test` naming the call; `--tools log` needs no workspace.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDsh, startDsh } from './dsh-child.js'

let home: string
let ws: string
let outside: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-replay-home-'))
  ws = mkdtempSync(join(tmpdir(), 'dsh-replay-ws-'))
  outside = join(mkdtempSync(join(tmpdir(), 'dsh-replay-outside-')), 'feed.txt')
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  for (const dir of [home, ws, join(outside, '..')]) rmSync(dir, { recursive: true, force: true })
})

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

/** Records a session: bash reads a file outside the workspace and changes one inside it, then read. */
async function record(): Promise<string> {
  writeFileSync(join(ws, 'notes.txt'), 'hello\n')
  writeFileSync(outside, 'feed v1\n')
  server.enqueue(
    call('b1', 'bash', { command: `cat ${outside} && echo more >> notes.txt` }),
    call('r1', 'read', { path: 'notes.txt' }),
    completionResponse({ text: 'done' }),
  )
  const run = await runDsh(['run', '--yes', 'look around'], { home, cwd: ws, modelUrl: server.url })
  expect(run.code, run.stderr).toBe(0)
  return readdirSync(join(home, 'sessions'))
    .find((name) => name.endsWith('.jsonl'))
    ?.replace(/\.jsonl$/, '') as string
}

// No model URL from here on: a replay needs no key and no network.
const dsh = (args: string[]) => runDsh(args, { home, cwd: ws })

describe('dsh replay', () => {
  it('replays a recorded session with no divergence and writes nothing to it or the workspace', async () => {
    const id = await record()
    const log = join(home, 'sessions', `${id}.jsonl`)
    const before = readFileSync(log)
    const workspace = readFileSync(join(ws, 'notes.txt'))
    const result = await dsh(['replay', id, '--json'])
    expect(result.code, result.stderr).toBe(0)
    const report = JSON.parse(result.stdout)
    expect(report).toMatchObject({
      original: id,
      requests: { original: 3, replay: 3 },
      toolResults: { original: 2, replay: 2 },
      workspace: 'checkpoint',
    })
    expect(report.divergence).toBeUndefined()
    expect(readFileSync(log).equals(before)).toBe(true)
    expect(readFileSync(join(ws, 'notes.txt')).equals(workspace)).toBe(true)
    // The replay is a session of its own, marked as a replay of the original.
    const replayLog = readFileSync(join(home, 'sessions', `${report.replay}.jsonl`), 'utf8')
    expect(replayLog).toContain(`"replay/of"`)
    expect(replayLog).toContain(`"of":"${id}"`)
  })

  it('--step walks the recorded requests: each as the model saw it, its answer, calls and results', async () => {
    const id = await record()
    const child = startDsh(['replay', id.slice(0, 8), '--step'], { home, cwd: ws })
    // A script of keys, as a person would type them: next, next (past the end), back, jump, messages, quit.
    child.proc.stdin.end(['n', 'n', 'n', 'p', 'g 1', 'm', 'g 9', 'x', 'q', ''].join('\n'))
    const { code, stdout } = await child.exited
    expect(code).toBe(0)
    expect(stdout).toContain(`session ${id}: 3 model requests`)
    expect(stdout).toMatch(
      /step 1 of 3 \(event \d+\)\n {2}request: deepseek:\S+ · system prompt [\d,]+ chars · \d+ tools · \d+ messages/,
    )
    expect(stdout).toContain('last message (user): look around')
    expect(stdout).toMatch(/call bash \{"command":"cat .*feed\.txt && echo more >> notes\.txt"\}\n {4}result: feed v1/)
    expect(stdout).toMatch(/step 2 of 3[\s\S]*call read \{"path":"notes.txt"\}\n {4}result: .*hello/)
    expect(stdout).toMatch(/step 3 of 3[\s\S]*answer: done/)
    expect(stdout).toContain('(the last step)')
    expect(stdout).toMatch(/\[\d\] user: look around/)
    expect(stdout).toContain('no step 9: the session has steps 1 to 3')
    expect(stdout).toContain('unknown key "x"')
  })

  it('names the first request a changed composition changes', async () => {
    const id = await record()
    const patch = join(home, 'no-jobs.yml')
    writeFileSync(patch, '- id: tool-jobs\n  disabled: true\n')
    const result = await dsh(['--patch', patch, 'replay', id, '--json'])
    expect(result.code).toBe(13)
    const report = JSON.parse(result.stdout)
    expect(report.divergence).toMatchObject({ kind: 'request', index: 0 })
    expect(report.divergence.part).toMatch(/^tools \(.*job_output/)
    expect(report.divergence.rows).toContain(
      'tool job_output was offered before and is not now (its row is disabled or removed)',
    )
    // A row's config changed: the system prompt differs, and the row behind the section is named.
    const reworded = join(home, 'reworded.yml')
    writeFileSync(reworded, '- id: system-prompt-base\n  config: { text: "You are a terse assistant." }\n')
    const changed = await dsh(['--patch', reworded, 'replay', id])
    expect(changed.code).toBe(13)
    expect(changed.stdout).toContain('diverged: request 1 differs in system')
    expect(changed.stdout).toContain('responsible: prompt section base (row system-prompt-base) is new or changed')
  })

  it('dsh test fails when a tool result changed, naming the call; --tools log serves the logged ones', async () => {
    const id = await record()
    const dir = join(home, 'recorded')
    mkdirSync(dir)
    copyFileSync(join(home, 'sessions', `${id}.jsonl`), join(dir, 'look-around.jsonl'))
    const passing = await dsh(['test', dir])
    expect(passing.code, passing.stderr).toBe(0)
    expect(passing.stdout).toContain('ok   look-around.jsonl')

    writeFileSync(outside, 'feed v2\n')
    const failing = await dsh(['test', dir])
    expect(failing.code).toBe(13)
    expect(failing.stdout).toContain('FAIL look-around.jsonl')
    expect(failing.stdout).toContain('bash b1')
    expect(failing.stdout).toContain('+ feed v2')

    // Served from the log, the tools do not run: the changed file no longer matters.
    const logged = await dsh(['test', dir, '--tools', 'log'])
    expect(logged.code, logged.stdout).toBe(0)
  })

  it('what-if: message 2 again under another model, in a new session on a scratch copy; the original untouched', async () => {
    server.enqueue(call('b1', 'bash', { command: 'echo one > a.txt' }), completionResponse({ text: 'first' }))
    expect((await runDsh(['run', '--yes', 'make a'], { home, cwd: ws, modelUrl: server.url })).code).toBe(0)
    const id = readdirSync(join(home, 'sessions'))
      .find((name) => name.endsWith('.jsonl'))
      ?.replace(/\.jsonl$/, '') as string
    server.enqueue(call('b2', 'bash', { command: 'echo two >> a.txt' }), completionResponse({ text: 'second' }))
    expect(
      (await runDsh(['run', '--yes', '--resume', id, 'extend a'], { home, cwd: ws, modelUrl: server.url })).code,
    ).toBe(0)
    const original = readFileSync(join(home, 'sessions', `${id}.jsonl`))
    const before = server.requests.length

    server.enqueue(call('w1', 'bash', { command: 'echo other > b.txt' }), completionResponse({ text: 'another way' }))
    const result = await runDsh(['replay', id, '--from', '2', '--model', 'deepseek-v4-flash', '--json'], {
      home,
      cwd: ws,
      modelUrl: server.url,
    })
    expect(result.code, result.stderr).toBe(0)
    const report = JSON.parse(result.stdout)
    expect(report.original).toMatchObject({ filesChanged: ['a.txt'], toolCalls: ['bash'], answer: 'second' })
    expect(report.whatIf).toMatchObject({ filesChanged: ['b.txt'], toolCalls: ['bash'], answer: 'another way' })
    // The new branch asked the other model; the user's workspace and the original session are as they were.
    expect(server.requests[before]?.body.model).toBe('deepseek-v4-flash')
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('one\ntwo\n')
    expect(readdirSync(ws).sort()).toEqual(['a.txt'])
    expect(readFileSync(join(home, 'sessions', `${id}.jsonl`)).equals(original)).toBe(true)
    // Its first events are the original's up to message 2.
    const lines = (file: string) =>
      readFileSync(join(home, 'sessions', `${file}.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => {
          const { crc: _crc, hash: _hash, ...event } = JSON.parse(line)
          return event
        })
    const branch = lines(report.whatIf.sessionId)
    const seed = branch.findIndex((event) => event.type === 'session/end-seed')
    expect(seed).toBeGreaterThan(0)
    expect(branch.slice(0, seed)).toEqual(lines(id).slice(0, seed))
    expect(lines(id)[seed]?.type).toBe('turn/start')
  })
})
