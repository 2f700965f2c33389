// `dsh demo` with no key and no network: the recorded session replays through the real pipeline,
// real tools fix the copied project, the project's own tests (re-run by the demo) pass, and the demo
// leaves nothing behind: no session in `dsh sessions`, no temp directory.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

it('fixes the sample project by replaying the recording, with no key and no network, and leaves nothing behind', async () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-demo-home-'))
  const temp = join(home, 'tmp')
  mkdirSync(temp)
  try {
    const { code, stdout, stderr } = await runDsh(['demo'], { home, env: { TMPDIR: temp } })
    expect(stderr).toContain('dsh demo: the tests pass.')
    expect(code).toBe(0)
    expect(stdout).toContain('Fixed `total` in cart.js')
    const project = /^ {2}(\/\S+\/project) /m.exec(stderr)?.[1] as string
    expect(project.startsWith(temp)).toBe(true)
    expect(stderr).toContain('all 3 tests passed')
    expect(existsSync(project)).toBe(false)
    expect(readdirSync(temp)).toEqual([])
    const sessions = await runDsh(['sessions', 'ls', '--json'], { home })
    expect(JSON.parse(sessions.stdout || '[]')).toEqual([])
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
})
