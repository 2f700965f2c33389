// The Seatbelt profile generator, by its text (this machine runs Linux: sandbox-exec itself is never run).
import { describe, expect, it } from 'vitest'
import type { SandboxPolicy } from '../../src/sandbox/index.js'
import { seatbeltProfile } from '../../src/sandbox/seatbelt.js'

const base: SandboxPolicy = {
  mode: 'workspace-write',
  workspaceRoot: '/Users/me/project',
  writableRoots: ['/Users/me/project', '/private/tmp'],
  secretPaths: ['/Users/me/.ssh', '/Users/me/.dsh/.credentials.yaml'],
  protectedPaths: [{ path: '/Users/me/project/.git/hooks', why: 'runs code on git actions' }],
  network: 'on',
}

const HEAD = [
  '(version 1)',
  '(deny default)',
  '(allow process-exec process-fork)',
  '(allow signal (target same-sandbox))',
  '(allow sysctl-read mach-lookup ipc-posix-shm)',
  '(allow file-read*)',
  '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/") (regex #"^/dev/ttys"))',
]

describe('seatbeltProfile', () => {
  it('workspace-write: writes to the roots, network on, secrets and protected paths denied last', () => {
    expect(seatbeltProfile(base).split('\n')).toEqual([
      ...HEAD,
      '(allow file-write* (subpath "/Users/me/project") (subpath "/private/tmp"))',
      '(allow network*)',
      '(deny file-read* file-write* (subpath "/Users/me/.ssh"))',
      '(deny file-read* file-write* (subpath "/Users/me/.dsh/.credentials.yaml"))',
      '(deny file-write* (subpath "/Users/me/project/.git/hooks"))',
      '',
    ])
  })

  it('read-only with network off: no write rule, no network rule', () => {
    const profile = seatbeltProfile({
      ...base,
      mode: 'read-only',
      writableRoots: [],
      network: 'off',
      secretPaths: [],
      protectedPaths: [],
    })
    expect(profile.split('\n')).toEqual([...HEAD, ''])
  })

  it('quotes paths with quotes and backslashes', () => {
    const profile = seatbeltProfile({ ...base, writableRoots: ['/tmp/a "b"\\c'], secretPaths: [] })
    expect(profile).toContain('(allow file-write* (subpath "/tmp/a \\"b\\"\\\\c"))')
  })
})
