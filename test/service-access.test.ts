import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { findAccessViolations } from './service-access.js'

const root = fileURLToPath(new URL('..', import.meta.url))

describe('service access convention', () => {
  it('no source file casts a service, names one `as never`, or hand-copies a seam interface', () => {
    expect(findAccessViolations(root)).toEqual([])
  })

  it('catches casts, `as never` names, seam copies and services whose owner is not imported', () => {
    const fake = mkdtempSync(join(tmpdir(), 'dsh-access-'))
    try {
      const write = (path: string, text: string) => {
        mkdirSync(join(fake, path, '..'), { recursive: true })
        writeFileSync(join(fake, path), text)
      }
      write(
        'packages/jobs/package.json',
        JSON.stringify({ name: '@dsh/jobs', exports: { '.': { source: './src/index.ts' } } }),
      )
      write(
        'packages/jobs/src/index.ts',
        "export {}\ndeclare module 'cordis' {\n  interface Context {\n    jobs: JobsService\n  }\n}\n",
      )
      write('packages/web/package.json', JSON.stringify({ name: '@dsh/web' }))
      write(
        'packages/web/src/typed.ts',
        "import type {} from '@dsh/jobs'\nexport const jobs = (ctx: Context) => ctx.get('jobs')\n",
      )
      write('packages/plain/package.json', JSON.stringify({ name: '@dsh/plain' }))
      write(
        'packages/plain/src/bad.ts',
        [
          'interface JobsSeam { list(): string[] }',
          "const a = ctx.get('jobs') as JobsSeam | undefined",
          "const b = this.ctx.get('jobs' as never)",
          "ctx.on('jobs/finished' as never, (() => {}) as never)",
          "const c = (ctx as unknown as { get(name: string): unknown }).get('x')",
          "const d = ctx.get('nothing')",
          'ctx.tools.register(tool as never)',
          '',
        ].join('\n'),
      )
      expect(findAccessViolations(fake)).toEqual([
        { file: 'packages/plain/src/bad.ts', line: 2, rule: 'cast', text: ".get('jobs') as" },
        { file: 'packages/plain/src/bad.ts', line: 5, rule: 'cast', text: 'as unknown as { get(' },
        { file: 'packages/plain/src/bad.ts', line: 3, rule: 'never', text: ".get('jobs' as never" },
        { file: 'packages/plain/src/bad.ts', line: 4, rule: 'never', text: ".on('jobs/finished' as never" },
        { file: 'packages/plain/src/bad.ts', line: 7, rule: 'never', text: '.register(tool as never)' },
        { file: 'packages/plain/src/bad.ts', line: 1, rule: 'seam', text: 'interface JobsSeam' },
        // `jobs` is declared, but nothing in @dsh/plain imports @dsh/jobs: the call is `any`.
        { file: 'packages/plain/src/bad.ts', line: 2, rule: 'untyped', text: "ctx.get('jobs')" },
        { file: 'packages/plain/src/bad.ts', line: 6, rule: 'untyped', text: "ctx.get('nothing')" },
      ])
    } finally {
      rmSync(fake, { recursive: true, force: true })
    }
  })
})
