import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { findViolations } from './architecture.js'

const root = fileURLToPath(new URL('..', import.meta.url))

describe('architecture', () => {
  it('no consumer or definition module imports a provider module', () => {
    expect(findViolations(root)).toEqual([])
  })

  it('the check catches relative and package imports of a provider, and source importing test support', () => {
    const fake = mkdtempSync(join(tmpdir(), 'dsh-arch-'))
    try {
      const write = (path: string, text: string) => {
        mkdirSync(join(fake, path, '..'), { recursive: true })
        writeFileSync(join(fake, path), text)
      }
      write(
        'packages/fs/package.json',
        JSON.stringify({
          name: '@dsh/fs',
          exports: { '.': { source: './src/index.ts' }, './local': { source: './src/local.ts' } },
          dsh: { providers: ['./src/local.ts'] },
        }),
      )
      write('packages/fs/src/index.ts', 'export interface Fs {}\n')
      write('packages/fs/src/local.ts', "import type { Fs } from './index.js'\n")
      write('packages/fs/src/tool.ts', "import { LocalFs } from './local.js'\n")
      write(
        'packages/test-support/package.json',
        JSON.stringify({
          name: '@dsh/test-support',
          exports: { '.': { source: './src/index.ts' } },
          dsh: { testSupport: true },
        }),
      )
      write('packages/test-support/src/index.ts', "export { LocalFs } from '@dsh/fs/local'\n")
      write('packages/tools/package.json', JSON.stringify({ name: '@dsh/tools' }))
      write(
        'packages/tools/src/read.ts',
        "export { default } from '@dsh/fs/local'\nconst x = await import('@dsh/fs/local')\nimport { boot } from '@dsh/test-support'\n",
      )
      expect(findViolations(fake)).toEqual([
        { importer: 'packages/fs/src/tool.ts', specifier: './local.js', provider: 'packages/fs/src/local.ts' },
        { importer: 'packages/tools/src/read.ts', specifier: '@dsh/fs/local', provider: 'packages/fs/src/local.ts' },
        { importer: 'packages/tools/src/read.ts', specifier: '@dsh/fs/local', provider: 'packages/fs/src/local.ts' },
        {
          importer: 'packages/tools/src/read.ts',
          specifier: '@dsh/test-support',
          provider: 'packages/test-support/src/index.ts',
        },
      ])
    } finally {
      rmSync(fake, { recursive: true, force: true })
    }
  })
})
