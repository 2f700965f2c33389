// A patch written before the regroup (decision 400) names a module by its old specifier: `check` must
// refuse it and say the new specifier, so the user can fix the row without reading the changelog.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-renamed-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

it('a patch row that uses a pre-regroup module name is refused with its new name', async () => {
  writeFileSync(join(home, 'old.yml'), '- id: fs\n  use: "@dsh/fs/local"\n')
  const old = await runDsh(['--patch', 'old.yml', 'check'], { home, modelUrl: 'http://127.0.0.1:9' })
  expect(old.code).toBe(4)
  expect(old.stderr).toContain('cannot resolve module "@dsh/fs/local" (it is now "@dsh/world/fs/local"')

  writeFileSync(join(home, 'new.yml'), '- id: fs\n  use: "@dsh/world/fs/local"\n')
  const fixed = await runDsh(['--patch', 'new.yml', 'check'], { home, modelUrl: 'http://127.0.0.1:9' })
  expect(fixed.stderr).toBe('')
  expect(fixed.code).toBe(0)
})
