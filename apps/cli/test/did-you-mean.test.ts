// A mistyped command, setting key, patch field or row id names the closest known name (the built CLI).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { runDshSync } from './dsh-child.js'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-home-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

const dsh = (...args: string[]) => runDshSync(args, { home })

describe('did you mean', () => {
  it('names the closest command for a mistyped one', () => {
    const result = dsh('sesions')
    expect(result.code).toBe(ExitCode.USAGE)
    expect(result.stderr).toContain("dsh: unknown command 'sesions' (did you mean 'sessions'?)")
    // Under a group whose default lists (`dsh sessions` is `dsh sessions ls`), not "too many arguments".
    const sub = dsh('sessions', 'shw', 'abc')
    expect(sub.code).toBe(ExitCode.USAGE)
    expect(sub.stderr).toContain("dsh: unknown command 'sessions shw' (did you mean 'show'?)")
    expect(dsh('config', 'lst').stderr).toContain("(did you mean 'list'?)")
    expect(dsh('sessions', '--json').stdout.trim()).toBe('[]')
  })

  it('names the closest setting key for a mistyped one, and writes nothing', () => {
    const result = dsh('config', 'set', 'modle', 'x')
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain('unknown setting "modle" (did you mean "model"?)')
    expect(dsh('config', 'get', 'model').stdout).not.toContain('x')
  })

  it('names the closest field of a patch row instead of "must NOT have additional properties"', () => {
    writeFileSync(join(home, 'p.yml'), '- id: session-title\n  disabeld: true\n')
    const result = dsh('--patch', 'p.yml', '--dump-config')
    expect(result.code).toBe(ExitCode.CONFIG)
    expect(result.stderr).toContain('unknown field "disabeld" (did you mean "disabled"?)')
    expect(result.stderr).not.toContain('additional properties')
  })

  it('names the closest row id for a patch naming an unknown one', () => {
    writeFileSync(join(home, 'q.yml'), '- id: session-titel\n  disabled: true\n')
    const result = dsh('--patch', 'q.yml', '--dump-config')
    expect(result.stderr).toContain('patch names unknown row id "session-titel" (did you mean "session-title"?)')
    expect(result.stdout).toMatch(/- id: session-title\n/)
  })
})
