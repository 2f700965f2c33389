import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { findDepViolations } from './workspace-deps.js'

const root = fileURLToPath(new URL('..', import.meta.url))

describe('workspace dependencies', () => {
  it('every @dsh import is a declared dependency and a tsconfig reference', () => {
    expect(findDepViolations(root)).toEqual([])
  })

  it('the check names a missing dependency and a missing reference', () => {
    const fake = mkdtempSync(join(tmpdir(), 'dsh-deps-'))
    try {
      mkdirSync(join(fake, 'packages/shell/src'), { recursive: true })
      writeFileSync(join(fake, 'packages/shell/package.json'), JSON.stringify({ name: '@dsh/shell', dependencies: {} }))
      writeFileSync(join(fake, 'packages/shell/tsconfig.json'), JSON.stringify({ references: [{ path: '../kernel' }] }))
      writeFileSync(join(fake, 'packages/shell/src/index.ts'), "import type { X } from '@dsh/subprocess/local'\n")
      expect(findDepViolations(fake)).toEqual([
        { workspace: 'packages/shell', imports: '@dsh/subprocess', missing: 'dependency' },
        { workspace: 'packages/shell', imports: '@dsh/subprocess', missing: 'reference' },
      ])
    } finally {
      rmSync(fake, { recursive: true, force: true })
    }
  })
})
