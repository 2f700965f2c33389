// Runs the built `dsh` binary (bin/dsh.js -> dist) as a child process with DSH_HOME in a temp dir.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { bin, runDshSync } from './dsh-child.js'

const fixtures = fileURLToPath(new URL('../../../packages/composition/test/fixtures/', import.meta.url))
let home: string

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-home-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

function dsh(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  return runDshSync(args, { home })
}

describe('dsh (built binary)', () => {
  it('prints help and version', () => {
    const help = dsh('--help')
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^Usage: dsh \[options\] \[command\]/)
    expect(help.stdout).toContain('--dump-config')
    const version = dsh('--version')
    expect(version.code).toBe(0)
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
    expect(version.stdout.trim()).toBe(pkg.version)
  })

  it('lists every exit code the code uses in --help, each with its meaning', () => {
    const help = dsh('--help').stdout
    const listed = help
      .slice(help.indexOf('Exit codes:'))
      .split('\n')
      .slice(1)
      .map((line) => /^ {2}(\d+) +\S/.exec(line)?.[1])
      .filter((code) => code !== undefined)
      .map(Number)
    expect(listed).toEqual(Object.values(ExitCode))
    expect(help).toMatch(/^ {2}9 +`run`: the model's answer was cut off/m)
  })

  it('creates profiles from the shipped templates on first use and dumps each with provenance', () => {
    for (const profile of ['headless', 'web']) {
      const result = dsh('--profile', profile, '--dump-config')
      expect(result.code).toBe(0)
      expect(existsSync(join(home, 'profiles', profile, 'profile.yml'))).toBe(true)
      expect(result.stdout).toContain(`# dsh effective config of profile ${profile}`)
      expect(result.stdout).toMatch(new RegExp(`#   bundle base \\(.*rows\\.yml\\)\\n#   bundle ${profile} \\(`))
      expect(result.stdout).toMatch(/# from bundle base\n- id: invariants\n/)
      expect(result.stdout).toMatch(/# from launcher\n- id: launcher\n/)
    }
  })

  it('shows every layer that patched a row: profile patch, then --patch files in order', () => {
    dsh('--dump-config') // creates the profile
    writeFileSync(join(home, 'profiles', 'headless', 'patch.yml'), '- id: invariants\n  config: { from: profile }\n')
    writeFileSync(join(home, 'one.yml'), '- id: invariants\n  config: { from: one }\n')
    writeFileSync(
      join(home, 'two.yml'),
      '- id: invariants\n  config: { from: two }\n- id: no-such-row\n  disabled: true\n',
    )
    const result = dsh('--patch', 'one.yml', '--patch', 'two.yml', '--dump-config')
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(
      '# from bundle base; patched by profile headless patch, then --patch one.yml, then --patch two.yml\n- id: invariants\n',
    )
    expect(result.stdout).toMatch(/- id: invariants\n {2}use: "@dsh\/kernel\/invariants"\n {2}config:\n {4}from: two\n/)
    expect(result.stderr).toContain('warning: --patch two.yml: patch names unknown row id "no-such-row"')

    const defaults = dsh('--patch', 'one.yml', '--dump-default-config')
    expect(defaults.code).toBe(0)
    expect(defaults.stdout).not.toContain('patched by')
    expect(defaults.stdout).not.toContain('from: one')
  })

  it('boots the profile with `check`, and exits 4 naming a row pending on a missing service', () => {
    const ok = dsh('check')
    expect(ok.stderr).toBe('')
    expect(ok.code).toBe(0)
    expect(ok.stdout).toMatch(/^profile headless: \d+ rows active\n/)

    writeFileSync(join(home, 'bad.yml'), `- id: needy\n  use: ${JSON.stringify(join(fixtures, 'needs-missing.mjs'))}\n`)
    const bad = dsh('--patch', 'bad.yml', 'check')
    expect(bad.code).toBe(4)
    expect(bad.stderr).toContain('dsh: these rows did not activate:')
    expect(bad.stderr).toMatch(/needy \(.*needs-missing\.mjs\): pending: waiting for service nowhereService/)
    expect(bad.stderr).not.toMatch(/\n\s+at /) // no stack trace without DSH_DEBUG

    // A tool whose schema does not compile activates (schemas compile on first use) but fails `check`.
    writeFileSync(
      join(home, 'typo.yml'),
      `- id: typo\n  use: ${JSON.stringify(fileURLToPath(new URL('fixtures/typo-tool.mjs', import.meta.url)))}\n`,
    )
    const typo = dsh('--patch', 'typo.yml', 'check')
    expect(typo.code).toBe(4)
    expect(typo.stderr).toContain('dsh: these tools cannot be called:')
    expect(typo.stderr).toContain('tool "typo": parameters do not compile')
    expect(typo.stderr).toContain(
      'dsh: these settings have invalid defaults:\n  setting "typo.limit": its default breaks its schema: must be >= 1',
    )
  })

  it('ends quietly when the reader of its output has gone (dsh check | true)', () => {
    // `true` exits before dsh writes a line, so every write meets a closed pipe.
    const piped = spawnSync('/bin/sh', ['-c', `"${process.execPath}" "${bin}" check | true`], {
      cwd: home,
      env: { PATH: process.env.PATH, DSH_HOME: home },
      encoding: 'utf8',
      timeout: 15_000,
    })
    expect(piped.status).toBe(0)
    expect(piped.stderr).toBe('')
  })

  it('reports configuration errors in one line with exit code 3', () => {
    const profile = dsh('--profile', 'nope', '--dump-config')
    expect(profile.code).toBe(3)
    expect(profile.stderr).toMatch(
      new RegExp(
        `^dsh: no profile "nope" in ${join(home, 'profiles')} and no shipped template of that name; choose one of: .*headless, .*web\n$`,
      ),
    )
    const missing = dsh('--patch', 'missing.yml', '--dump-config')
    expect(missing.code).toBe(3)
    expect(missing.stderr).toBe(`dsh: --patch missing.yml: file not found: ${join(home, 'missing.yml')}\n`)
    writeFileSync(join(home, 'env.yml'), '- id: invariants\n  config: { x: !env DSH_CLI_TEST_UNSET }\n')
    const env = dsh('--patch', 'env.yml', 'check')
    expect(env.code).toBe(4)
    expect(env.stderr).toContain('environment variable DSH_CLI_TEST_UNSET is not set')
  })

  it('treats an unknown subcommand or a bad option value as a usage error', () => {
    expect(dsh('web', '--port', 'nope').code).toBe(2)
    expect(dsh('frobnicate').code).toBe(2)
  })
})
