// `dsh demo` with no key and no network: the recorded session replays through the real pipeline,
// real tools fix the copied project, and the project's own tests (re-run here) pass.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

it('fixes the sample project by replaying the recording, with no key and no network', async () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-demo-home-'))
  try {
    const { code, stdout, stderr } = await runDsh(['demo'], { home })
    expect(stderr).toContain('dsh demo: the tests pass.')
    expect(code).toBe(0)
    expect(stdout).toContain('Fixed `total` in cart.js')
    const project = /^ {2}(\/\S+\/project)$/m.exec(stderr)?.[1] as string
    expect(readFileSync(join(project, 'cart.js'), 'utf8')).toContain('sum += item.price * item.quantity')
    const tests = spawnSync(process.execPath, ['test.js'], { cwd: project, encoding: 'utf8' })
    expect(tests.status).toBe(0)
    rmSync(join(project, '..'), { recursive: true, force: true })
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
})
