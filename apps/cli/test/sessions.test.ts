// `dsh sessions` against sessions that `dsh run` really wrote (built binary, mock model server); a
// session dsh cannot open says why and what to do, with its own exit code (busy 10, damaged 11).
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { acquireLease } from '@dsh/session/store'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { runDsh, startDsh } from './dsh-child.js'

let home: string
let server: MockLlmServer
let id: string

function dsh(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runDsh(args, { home, modelUrl: server.url })
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-sessions-'))
  server = await startMockLlmServer({
    responses: [
      completionResponse({ text: 'Paris is the capital of France.' }),
      completionResponse({ text: 'Berlin.' }),
    ],
  })
  const run = await dsh('run', '--output', 'json', 'What is the capital of France?')
  expect(run.code).toBe(0)
  id = JSON.parse(run.stdout).sessionId
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

describe('dsh sessions', () => {
  it('lists sessions as a table and as JSON', async () => {
    const table = await dsh('sessions', 'ls')
    expect(table.code).toBe(0)
    const [head, row] = table.stdout.trim().split('\n')
    expect(head).toMatch(/^ID\s+TITLE\s+CWD\s+UPDATED\s+MESSAGES\s+COST$/)
    expect(row).toContain(id)
    // The question and the answer; the DeepSeek catalog names no price, so the cost is unknown, not $0.
    expect(row).toMatch(/\s2\s+unknown$/)
    expect(row).toContain('What is the capital of France?')
    const json = await dsh('sessions', 'ls', '--json')
    const list = JSON.parse(json.stdout)
    expect(list).toHaveLength(1)
    expect(list[0]).toMatchObject({ id, cwd: home, title: 'What is the capital of France?' })
    expect(list[0].eventCount).toBeGreaterThan(5)
    expect(list[0].cost).toEqual({
      usd: 0,
      requests: 1,
      unknownRequests: 1,
      models: { 'deepseek:deepseek-v4-pro': { usd: 0, requests: 1, unknownRequests: 1 } },
    })
  })

  it('shows a readable transcript and exports markdown and jsonl', async () => {
    const show = await dsh('sessions', 'show', id)
    expect(show.code).toBe(0)
    expect(show.stdout).toContain('user: What is the capital of France?\nassistant: Paris is the capital of France.')
    const md = await dsh('sessions', 'export', id, '--format', 'md')
    expect(md.stdout).toContain('## User\n\nWhat is the capital of France?')
    const jsonl = await dsh('sessions', 'export', id, '--format', 'jsonl')
    const lines = jsonl.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(lines[0]).toMatchObject({ type: 'session', id })
    expect(lines.slice(1).map((e) => e.seq)).toEqual(lines.slice(1).map((_, i) => i))
  })

  it('forks a session, and the fork continues on its own', async () => {
    const fork = await dsh('sessions', 'fork', id)
    expect(fork.code).toBe(0)
    const child = fork.stdout.trim()
    expect(child).not.toBe(id)
    const run = await dsh('run', '--resume', child, 'And Germany?')
    expect(run.code).toBe(0)
    expect(run.stdout).toBe('Berlin.\n')
    const sent = server.requests[1]?.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])
    expect(sent.filter((m: string[]) => m[0] !== 'system' && !m[1]?.startsWith('Sandbox:'))).toEqual([
      ['user', 'What is the capital of France?'],
      ['assistant', 'Paris is the capital of France.'],
      ['user', 'And Germany?'],
    ])
    const exported = await dsh('sessions', 'export', child, '--format', 'jsonl')
    expect(JSON.parse(exported.stdout.split('\n')[0] as string)).toMatchObject({ parentSession: id })
  })

  it('refuses a fork inside an open turn and an unknown id, with clear errors', async () => {
    const inside = await dsh('sessions', 'fork', id, '--at', '3')
    expect(inside.code).not.toBe(0)
    expect(inside.stderr).toMatch(/^dsh: cannot fork session .* at event 3: the prefix ends inside an open turn/)
    const missing = await dsh('sessions', 'show', 'no-such-session')
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/^dsh: no durable session no-such-session/)
  })
})

describe('a session dsh cannot open', () => {
  let damagedId: string
  const logPath = () => join(home, 'sessions', `${damagedId}.jsonl`)
  beforeAll(async () => {
    for (let i = 0; i < 3; i++) server.enqueue(completionResponse({ text: 'ok' }))
    const first = await dsh('run', '--output', 'json', 'first')
    damagedId = JSON.parse(first.stdout).sessionId
    expect((await dsh('run', '--resume', damagedId, 'second')).code).toBe(0)
  })

  it('busy in another process: exit 10, naming the holder', async () => {
    const lease = acquireLease(join(home, 'sessions'), damagedId)
    try {
      const result = await dsh('run', '--resume', damagedId, 'more')
      expect(result.code).toBe(ExitCode.SESSION_BUSY)
      expect(result.stderr).toContain(`is open in another process (pid ${process.pid}`)
    } finally {
      lease.release()
    }
  })

  it('damaged: exit 11 with the repair command; repair keeps every good line; the session resumes', async () => {
    const original = readFileSync(logPath(), 'utf8')
    const lines = original.trimEnd().split('\n')
    const bad = lines.findIndex((line) => line.includes('"second"'))
    expect(bad).toBeGreaterThan(1)
    const damaged = [...lines]
    damaged[bad] = (damaged[bad] as string).replace('"second"', '"sekond"')
    writeFileSync(logPath(), `${damaged.join('\n')}\n`)

    const refused = await dsh('run', '--resume', damagedId, 'more')
    expect(refused.code).toBe(ExitCode.SESSION_CORRUPT)
    expect(refused.stderr).toContain(`line ${bad + 1} was changed after it was written`)
    expect(refused.stderr).toContain(`dsh sessions repair ${damagedId}`)

    const repaired = await dsh('sessions', 'repair', damagedId)
    expect(repaired.code).toBe(0)
    expect(readFileSync(logPath(), 'utf8')).toBe(`${lines.slice(0, bad).join('\n')}\n`)
    const side = readdirSync(join(home, 'sessions')).find((name) => name.startsWith(`${damagedId}.jsonl.damaged-`))
    expect(readFileSync(join(home, 'sessions', side as string), 'utf8')).toBe(`${damaged.slice(bad).join('\n')}\n`)

    const resumed = await dsh('run', '--resume', damagedId, 'again')
    expect(resumed.code).toBe(0)
    expect(readFileSync(logPath(), 'utf8').startsWith(`${lines.slice(0, bad).join('\n')}\n`)).toBe(true)
  })
})

describe('dsh sessions ls and terminal escapes', () => {
  it('prints a title without the escape sequences a prompt or a model put in it', async () => {
    const own = mkdtempSync(join(tmpdir(), 'dsh-sessions-esc-'))
    const model = await startMockLlmServer({ responses: [completionResponse({ text: 'ok' })] })
    try {
      // An OSC that retitles the terminal, a CSI colour, a bell and a C1 CSI: none may reach the terminal.
      const prompt = 'fix \x1b]0;pwned\x07the \x1b[31mbug\x1b[0m now\x07 \x9b2J'
      const run = await runDsh(['run', prompt], { home: own, modelUrl: model.url })
      expect(run.code).toBe(0)
      const table = await runDsh(['sessions', 'ls'], { home: own, modelUrl: model.url })
      expect(table.code).toBe(0)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
      expect(table.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/)
      expect(table.stdout).toContain('fix the bug now')
    } finally {
      await model.close()
      rmSync(own, { recursive: true, force: true })
    }
  })

  it('show prints the prompt, the answer and the cwd without escape sequences, keeping line breaks', async () => {
    const own = mkdtempSync(join(tmpdir(), 'dsh-sessions-esc-'))
    // The answer clears the screen, rewrites its line with a carriage return and sets a hyperlink.
    const answer = 'first line\x1b[2J\nsecond\rFAKE \x1b]8;;http://evil/\x07link\x1b]8;;\x07 end'
    const model = await startMockLlmServer({ responses: [completionResponse({ text: answer })] })
    try {
      const cwd = join(own, 'work\x1b]0;retitled\x07dir')
      mkdirSync(cwd)
      const run = await runDsh(['run', '--output', 'json', 'fix \x1b]0;pwned\x07the \x1b[31mbug\x1b[0m now'], {
        home: own,
        cwd,
        modelUrl: model.url,
      })
      expect(run.code, run.stderr).toBe(0)
      const show = await runDsh(['sessions', 'show', JSON.parse(run.stdout).sessionId], {
        home: own,
        modelUrl: model.url,
      })
      expect(show.code, show.stderr).toBe(0)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
      expect(show.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/)
      expect(show.stdout).toContain('user: fix the bug now')
      expect(show.stdout).toContain('first line\n')
      expect(show.stdout).toContain('secondFAKE link end')
      expect(show.stdout).toContain(`cwd ${join(own, 'workdir')} `)
    } finally {
      await model.close()
      rmSync(own, { recursive: true, force: true })
    }
  })
})

describe('file modes of a fresh $DSH_HOME', () => {
  it('creates the home 0700 and the session logs, SQLite file and blobs 0600', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'dsh-modes-'))
    const fresh = join(parent, 'home') // does not exist yet: dsh creates it
    const model = await startMockLlmServer({
      responses: [completionResponse({ text: 'one' }), completionResponse({ text: 'two' })],
    })
    const mode = (path: string) => statSync(path).mode & 0o777
    try {
      const png = join(parent, 'pixel.png')
      writeFileSync(png, Buffer.from(PIXEL_PNG, 'base64'))
      const run = await runDsh(['run', '--attach', png, 'look'], { home: fresh, modelUrl: model.url, cwd: parent })
      expect(run.code, run.stderr).toBe(0)
      expect(mode(fresh)).toBe(0o700)
      expect(mode(join(fresh, 'sessions'))).toBe(0o700)
      const logs = readdirSync(join(fresh, 'sessions')).filter((name) => name.endsWith('.jsonl'))
      expect(logs).toHaveLength(1)
      expect(mode(join(fresh, 'sessions', logs[0] as string))).toBe(0o600)
      const blobs = readdirSync(join(fresh, 'blobs'), { recursive: true, withFileTypes: true }).filter((e) =>
        e.isFile(),
      )
      expect(blobs.length).toBeGreaterThan(0)
      for (const blob of blobs) expect(mode(join(blob.parentPath, blob.name))).toBe(0o600)
      expect(mode(join(fresh, 'blobs'))).toBe(0o700)

      const sqlite = await runDsh(['run', 'again'], {
        home: fresh,
        modelUrl: model.url,
        cwd: parent,
        env: { DSH_SESSION_STORE: 'sqlite' },
      })
      expect(sqlite.code, sqlite.stderr).toBe(0)
      const dbs = readdirSync(fresh, { recursive: true, withFileTypes: true }).filter((e) =>
        /\.(db|sqlite)$/.test(e.name),
      )
      expect(dbs.length).toBeGreaterThan(0)
      for (const db of dbs) expect(mode(join(db.parentPath, db.name))).toBe(0o600)
    } finally {
      await model.close()
      rmSync(parent, { recursive: true, force: true })
    }
  })
  it('writes the lease of an open session 0600, for JSONL and SQLite', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'dsh-modes-'))
    const fresh = join(parent, 'home')
    const mode = (path: string) => statSync(path).mode & 0o777
    try {
      for (const store of ['jsonl', 'sqlite']) {
        // The model never answers: the session stays open, its lease held, until dsh is stopped.
        const model = await startMockLlmServer({ responses: [{ type: 'hang' }] })
        const child = startDsh(['run', 'wait'], {
          home: fresh,
          modelUrl: model.url,
          cwd: parent,
          env: { DSH_SESSION_STORE: store },
        })
        try {
          await model.waitForRequests(1, 20_000)
          const locks = readdirSync(fresh, { recursive: true, withFileTypes: true }).filter((e) =>
            e.name.endsWith('.lock'),
          )
          expect(locks.length, store).toBeGreaterThan(0)
          for (const lock of locks) {
            expect(mode(join(lock.parentPath, lock.name)), `${store} ${lock.name}`).toBe(0o600)
            expect(mode(lock.parentPath), `${store} ${lock.parentPath}`).toBe(0o700)
          }
        } finally {
          child.proc.kill('SIGTERM')
          await child.exited
          await model.close()
        }
      }
    } finally {
      rmSync(parent, { recursive: true, force: true })
    }
  })

  it('writes $DSH_HOME/settings.yaml 0600 when dsh creates it and each time it rewrites it', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'dsh-modes-'))
    const fresh = join(parent, 'home')
    const file = join(fresh, 'settings.yaml')
    const mode = (path: string) => statSync(path).mode & 0o777
    try {
      const set = await runDsh(['config', 'set', 'model', 'deepseek:one'], { home: fresh, cwd: parent })
      expect(set.code, set.stderr).toBe(0)
      expect(mode(fresh)).toBe(0o700)
      expect(mode(file)).toBe(0o600)
      // A file the user made readable by others (an editor, a copy) is private again after dsh writes it.
      chmodSync(file, 0o644)
      expect((await runDsh(['config', 'set', 'model', 'deepseek:two'], { home: fresh, cwd: parent })).code).toBe(0)
      expect(mode(file)).toBe(0o600)
      chmodSync(file, 0o664)
      expect((await runDsh(['config', 'unset', 'model'], { home: fresh, cwd: parent })).code).toBe(0)
      expect(mode(file)).toBe(0o600)
      expect(readdirSync(fresh).filter((name) => name.endsWith('.tmp'))).toEqual([])
    } finally {
      rmSync(parent, { recursive: true, force: true })
    }
  })
})

/** A 1x1 PNG. */
const PIXEL_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
