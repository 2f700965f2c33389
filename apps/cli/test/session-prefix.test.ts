// Session ids by any unique prefix, as git takes commit ids (built binary, mock model server): `dsh run
// --resume`, `dsh sessions show/export/rm`; an ambiguous prefix is refused listing the candidates.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { runDsh } from './dsh-child.js'

let home: string
let server: MockLlmServer
let id: string
let copy: string

function dsh(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runDsh(args, { home, modelUrl: server.url })
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-prefix-'))
  server = await startMockLlmServer({
    responses: [completionResponse({ text: 'Paris.' }), completionResponse({ text: 'Berlin.' })],
  })
  const run = await dsh('run', '--output', 'json', 'Capital of France?')
  expect(run.code).toBe(0)
  id = JSON.parse(run.stdout).sessionId
  // A second session sharing the first four characters: the same log imported under another id.
  copy = `${id.slice(0, 4)}zz-copy`
  const bundle = await dsh('sessions', 'export', id, '--format', 'bundle')
  writeFileSync(join(home, 'copy.jsonl'), bundle.stdout)
  expect((await dsh('sessions', 'import', '--as', copy, join(home, 'copy.jsonl'))).code).toBe(0)
}, 60_000)
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

describe('session id prefixes', () => {
  it('show and export take a unique prefix', async () => {
    const show = await dsh('sessions', 'show', id.slice(0, 8))
    expect(show.code).toBe(0)
    expect(show.stdout).toContain(`session ${id}`)
    expect(show.stdout).toContain('user: Capital of France?')
    const md = await dsh('sessions', 'export', id.slice(0, 6), '--format', 'md')
    expect(md.stdout).toContain('Capital of France?')
  })

  it('refuses an ambiguous prefix, listing the candidates', async () => {
    const show = await dsh('sessions', 'show', id.slice(0, 4))
    expect(show.code).toBe(ExitCode.USAGE)
    expect(show.stderr).toContain(`session id prefix "${id.slice(0, 4)}" matches 2 sessions`)
    expect(show.stderr).toContain(id)
    expect(show.stderr).toContain(copy)
  })

  it('dsh run --resume continues the session a prefix names', async () => {
    const run = await dsh('run', '--output', 'json', '--resume', id.slice(0, 8), 'And Germany?')
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout).sessionId).toBe(id)
    expect(readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')).toContain('And Germany?')
    const ambiguous = await dsh('run', '--resume', id.slice(0, 4), 'hello')
    expect(ambiguous.code).toBe(ExitCode.USAGE)
    expect(ambiguous.stderr).toContain('matches 2 sessions')
  })

  it('rm takes a prefix and removes only that session', async () => {
    const rm = await dsh('sessions', 'rm', `${id.slice(0, 4)}zz`)
    expect(rm.code).toBe(0)
    expect(rm.stderr).toContain(`removed ${copy}`)
    expect(existsSync(join(home, 'sessions', `${copy}.jsonl`))).toBe(false)
    expect(existsSync(join(home, 'sessions', `${id}.jsonl`))).toBe(true)
  })
})
