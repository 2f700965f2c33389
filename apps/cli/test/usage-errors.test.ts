// Mistakes on the command line and in settings stop `dsh run` up front with their own exit codes
// (usage 2, configuration 3), never "unexpected error" (1), and never after the run started.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMockLlmServer } from '@dsh/test-support'
import { afterAll, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { runDsh } from './dsh-child.js'

const homes: string[] = []
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true })
})

function home(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-usage-'))
  homes.push(dir)
  return dir
}

it('--resume of an unknown session is a usage error that says how to find one; no request is sent', async () => {
  await using server = await startMockLlmServer()
  const run = await runDsh(['run', '--resume', 'no-such-id', 'hi'], { home: home(), modelUrl: server.url })
  expect(run.code, run.stderr).toBe(ExitCode.USAGE)
  expect(run.stderr).toMatch(/^dsh: no durable session no-such-id at /m)
  expect(run.stderr).toMatch(/^dsh: `dsh sessions ls` lists the sessions/m)
  expect(run.stderr).not.toMatch(/DSH_DEBUG/)
  expect(server.requests).toHaveLength(0)
})

it('a `preset` setting naming no preset is a configuration error', async () => {
  await using server = await startMockLlmServer()
  const run = await runDsh(['run', 'hi'], { home: home(), modelUrl: server.url, env: { DSH_PRESET: 'bogus' } })
  expect(run.code, run.stderr).toBe(ExitCode.CONFIG)
  expect(run.stderr).toContain('no preset "bogus"')
  expect(run.stderr).not.toMatch(/DSH_DEBUG/)
  expect(server.requests).toHaveLength(0)
})

it('--cwd naming a missing directory is refused before anything runs, naming the path', async () => {
  await using server = await startMockLlmServer()
  const dir = home()
  const missing = join(dir, 'no', 'such')
  const run = await runDsh(['run', '--cwd', missing, 'hi'], { home: dir, modelUrl: server.url })
  expect(run.code, run.stderr).toBe(ExitCode.USAGE)
  expect(run.stderr).toContain(`dsh: --cwd ${missing}: ${missing} is not an existing directory`)
  expect(server.requests).toHaveLength(0)
  // Nothing was started: no session was written.
  const sessions = join(dir, 'sessions')
  expect(existsSync(sessions) ? readdirSync(sessions).filter((name) => name.endsWith('.jsonl')) : []).toEqual([])
})

it('a patch or settings file that fails its schema names the row or field path and the expected shape', async () => {
  const dir = home()
  writeFileSync(join(dir, 'bad.yml'), '- id: session-title\n  disabeld: true\n')
  const patch = await runDsh(['--patch', 'bad.yml', 'check'], { home: dir })
  expect(patch.code, patch.stderr).toBe(ExitCode.CONFIG)
  expect(patch.stderr).toContain(
    '  - row 1 (id session-title): unknown field "disabeld" (did you mean "disabled"?); a row is { id, use?, config?, disabled? }',
  )
  expect(patch.stderr).not.toContain('must NOT have additional properties')

  writeFileSync(join(dir, 'settings.yaml'), 'endpoints:\n  local:\n    baseUrl: ftp://box\n    modle: qwen3\n')
  const settings = await runDsh(['models'], { home: dir })
  expect(settings.code, settings.stderr).toBe(ExitCode.CONFIG)
  expect(settings.stderr).toContain('endpoints.local: unknown field "modle"')
  expect(settings.stderr).toContain('endpoints.local.baseUrl: must match pattern "^https?://"')
  expect(settings.stderr).toContain('(allowed: NAME: { baseUrl: http(s)://..., apiKey?: CREDENTIAL_NAME')
})
