// Rewind as `dsh` users get it (issue 32): two `dsh run` turns change a workspace with write, edit and
// bash (sed -i, rm, mv, a new binary file); `dsh sessions rewind` takes the files back byte for byte
// (compared with a copy this test made, not one dsh made), refuses to overwrite a concurrent edit,
// gives the changes back with --redo, and forks the conversation so the next request has none of the
// later messages. A SIGKILL in the middle of a restore leaves every file old or new and the log says which.
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import type {} from '@dsh/interaction/rewind'
import { eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh, startDsh } from './dsh-child.js'

let home: string
let ws: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-rewind-home-'))
  ws = mkdtempSync(join(tmpdir(), 'dsh-rewind-ws-'))
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(ws, { recursive: true, force: true })
})

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

/** Every file under `dir` (relative path -> bytes), `.git` left out. */
function tree(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>()
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const abs = join(at, name)
      if (statSync(abs).isDirectory()) walk(abs)
      else out.set(relative(dir, abs), readFileSync(abs))
    }
  }
  walk(dir)
  return out
}

function expectSameTree(actual: string, expected: string) {
  const a = tree(actual)
  const b = tree(expected)
  expect([...a.keys()].sort()).toEqual([...b.keys()].sort())
  for (const [path, bytes] of b) expect(a.get(path)?.equals(bytes), path).toBe(true)
}

const dsh = (args: string[]) => runDsh(args, { home, cwd: ws, modelUrl: server.url })

/** Turn 1 writes notes.txt; turn 2 edits it, and bash changes three more files and adds a binary one. */
async function twoTurns(): Promise<{ id: string; afterOne: string }> {
  writeFileSync(join(ws, 'keep.txt'), 'keep me\n')
  writeFileSync(join(ws, 'move.txt'), 'move me\n')
  writeFileSync(join(ws, 'config.ini'), 'mode=alpha\n')
  server.enqueue(call('w1', 'write', { path: 'notes.txt', content: 'first line\n' }))
  server.enqueue(completionResponse({ text: 'wrote it' }))
  const one = await dsh(['run', '--yes', 'one'])
  expect(one.code, one.stderr).toBe(0)
  const id = readdirSync(join(home, 'sessions'))
    .find((name) => name.endsWith('.jsonl'))
    ?.replace(/\.jsonl$/, '') as string
  const afterOne = mkdtempSync(join(tmpdir(), 'dsh-rewind-copy-'))
  cpSync(ws, afterOne, { recursive: true })

  server.enqueue(call('r1', 'read', { path: 'notes.txt' }))
  server.enqueue(call('e1', 'edit', { path: 'notes.txt', old_string: 'first', new_string: 'second' }))
  server.enqueue(
    call('b1', 'bash', {
      command:
        "sed -i 's/alpha/beta/' config.ini && rm keep.txt && mv move.txt moved.txt && printf '\\000\\001\\377' > new.bin",
    }),
  )
  server.enqueue(completionResponse({ text: 'changed them' }))
  const two = await dsh(['run', '--yes', '--resume', id, 'two'])
  expect(two.code, two.stderr).toBe(0)
  expect(readFileSync(join(ws, 'notes.txt'), 'utf8')).toBe('second line\n')
  expect(readFileSync(join(ws, 'new.bin'))).toEqual(Buffer.from([0, 1, 255]))
  return { id, afterOne }
}

describe('dsh sessions rewind', () => {
  it('files back byte for byte, a concurrent edit refused, --redo, then the conversation forked', async () => {
    const { id, afterOne } = await twoTurns()
    const afterTwo = mkdtempSync(join(tmpdir(), 'dsh-rewind-copy2-'))
    cpSync(ws, afterTwo, { recursive: true })

    const listed = await dsh(['sessions', 'rewind', id])
    expect(listed.code).toBe(0)
    expect(listed.stdout.trim().split('\n')).toHaveLength(2)
    const points = JSON.parse((await dsh(['sessions', 'rewind', id, '--json'])).stdout)
    expect(points.map((p: { changed: number }) => p.changed)).toEqual([1, 6])

    // The user edits a file turn 2 changed: a files rewind refuses and changes nothing.
    writeFileSync(join(ws, 'config.ini'), 'mode=mine\n')
    const refused = await dsh(['sessions', 'rewind', id, '--to', '2', '--files'])
    expect(refused.code).toBe(12)
    expect(refused.stderr).toContain('config.ini')
    expect(readFileSync(join(ws, 'config.ini'), 'utf8')).toBe('mode=mine\n')
    expect(existsSync(join(ws, 'new.bin'))).toBe(true)

    // Put it back as turn 2 left it: now the files go back to how turn 1 left them.
    writeFileSync(join(ws, 'config.ini'), 'mode=beta\n')
    const files = await dsh(['sessions', 'rewind', id, '--to', '2', '--files'])
    expect(files.code, files.stderr).toBe(0)
    expectSameTree(ws, afterOne)

    const redo = await dsh(['sessions', 'rewind', id, '--redo'])
    expect(redo.code, redo.stderr).toBe(0)
    expectSameTree(ws, afterTwo)

    // Conversation only: a new session before message 2; the workspace stays as it is.
    const forked = await dsh(['sessions', 'rewind', id, '--to', '2', '--conversation'])
    expect(forked.code, forked.stderr).toBe(0)
    const child = forked.stdout.trim()
    expect(child).not.toBe(id)
    expectSameTree(ws, afterTwo)
    const before = server.requests.length
    server.enqueue(completionResponse({ text: 'fresh' }))
    const next = await dsh(['run', '--resume', child, 'two, differently'])
    expect(next.code, next.stderr).toBe(0)
    const body = JSON.stringify(server.requests[before]?.body.messages)
    expect(body).toContain('one')
    expect(body).toContain('two, differently')
    expect(body).not.toContain('changed them')
    expect(body).not.toContain('"two"')

    // Both: files and conversation together; the original session is kept.
    const both = await dsh(['sessions', 'rewind', id, '--to', '2', '--both'])
    expect(both.code, both.stderr).toBe(0)
    expectSameTree(ws, afterOne)
    expect(readdirSync(join(home, 'sessions')).filter((name) => name === `${id}.jsonl`)).toHaveLength(1)
    rmSync(afterOne, { recursive: true })
    rmSync(afterTwo, { recursive: true })
  })

  it('a SIGKILL during a restore leaves every file old or new, and the next attach logs which', async () => {
    mkdirSync(join(ws, 'data'))
    const old = (i: number) => Buffer.alloc(512 * 1024, i)
    for (let i = 0; i < 120; i++) writeFileSync(join(ws, 'data', `f${i}`), old(i))
    server.enqueue(call('b1', 'bash', { command: 'for f in data/*; do head -c 524288 /dev/urandom > "$f"; done' }))
    server.enqueue(completionResponse({ text: 'scrambled' }))
    expect((await dsh(['run', '--yes', 'scramble'])).code).toBe(0)
    const id = readdirSync(join(home, 'sessions'))[0]?.replace(/\.jsonl$/, '') as string
    const scrambled = tree(ws)
    const log = join(home, 'sessions', `${id}.jsonl`)

    const child = startDsh(['sessions', 'rewind', id, '--to', '1', '--files'], { home, cwd: ws, modelUrl: server.url })
    // Killed once the first file is back (files are written in path order, data/f0 first).
    await expect
      .poll(
        () =>
          readFileSync(log, 'utf8').includes('"rewind/started"') && readFileSync(join(ws, 'data', 'f0')).equals(old(0)),
        {
          timeout: 20_000,
          interval: 1,
        },
      )
      .toBe(true)
    child.proc.kill('SIGKILL')
    await child.exited

    const now = tree(ws)
    let restored = 0
    for (let i = 0; i < 120; i++) {
      const path = join('data', `f${i}`)
      const bytes = now.get(path)
      const isOld = bytes?.equals(old(i)) === true
      expect(isOld || bytes?.equals(scrambled.get(path) as Buffer), path).toBe(true)
      if (isOld) restored++
    }
    expect(restored).toBeGreaterThan(0)
    // The next attach says which files came back and clears what the killed restore left behind.
    server.enqueue(completionResponse({ text: 'ok' }))
    expect((await dsh(['run', '--resume', id, 'status?'])).code).toBe(0)
    const interrupted = eventData(durableEvents(home), 'rewind/interrupted')
    expect(interrupted).toHaveLength(1)
    expect(interrupted[0]?.restored.length).toBe(restored)
    expect((interrupted[0]?.restored.length ?? 0) + (interrupted[0]?.notRestored.length ?? 0)).toBe(120)
    expect(readdirSync(join(ws, 'data')).filter((name) => name.includes('dsh-restore'))).toEqual([])
  })

  it('a rewind of the parent takes back what its subagent changed in that span, and says so', async () => {
    writeFileSync(join(ws, 'base.txt'), 'base\n')
    const before = mkdtempSync(join(tmpdir(), 'dsh-rewind-before-'))
    cpSync(ws, before, { recursive: true })
    // The parent asks a subagent; the child (same mock model) writes a file with bash, then answers.
    server.enqueue(call('t1', 'task', { prompt: 'make child.txt', description: 'make a file' }))
    server.enqueue(call('cb1', 'bash', { command: 'echo from-child > child.txt && rm base.txt' }))
    server.enqueue(completionResponse({ text: 'child done' }))
    server.enqueue(completionResponse({ text: 'parent done' }))
    const run = await dsh(['run', '--yes', 'delegate'])
    expect(run.code, run.stderr).toBe(0)
    expect(readFileSync(join(ws, 'child.txt'), 'utf8')).toBe('from-child\n')
    const parent = readdirSync(join(home, 'sessions'))
      .filter((name) => name.endsWith('.jsonl'))
      .map((name) => name.replace(/\.jsonl$/, ''))
      .find(
        (id) =>
          !readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')
            .split('\n')[0]
            ?.includes('parentSession'),
      )
    expect(parent).toBeDefined()
    const result = await dsh(['sessions', 'rewind', parent as string, '--to', '1', '--files', '--json'])
    expect(result.code, result.stderr).toBe(0)
    const outcome = JSON.parse(result.stdout)
    expect(outcome.files.subagents).toHaveLength(1)
    expect(outcome.files.text).toContain('1 subagent')
    expectSameTree(ws, before)
    rmSync(before, { recursive: true })
  })
})
