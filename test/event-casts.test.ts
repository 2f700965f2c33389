import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { findDataCasts } from './event-casts.js'

const root = fileURLToPath(new URL('..', import.meta.url))

describe('session event data is read by narrowing, never cast', () => {
  it('no source or test file outside packages/session casts an event payload', () => {
    expect(findDataCasts(root)).toEqual([])
  })

  it('the count finds casts in sources and tests, and leaves packages/session and dist alone', () => {
    const fake = mkdtempSync(join(tmpdir(), 'dsh-casts-'))
    try {
      const write = (path: string, text: string) => {
        mkdirSync(join(fake, path, '..'), { recursive: true })
        writeFileSync(join(fake, path), text)
      }
      const cast = ['const call = (event', 'data as { call: unknown }).call\n'].join('.')
      const wrapped = ['const message = (event', 'data) as never\n'].join('.')
      write('packages/acp/src/updates.ts', `// fine\n${cast}`)
      write('apps/web/src/projection.tsx', wrapped)
      write('test/reader.test.ts', cast)
      write('packages/session/src/log.ts', cast)
      write('packages/acp/dist/updates.js', cast)
      write('packages/acp/src/narrowed.ts', "if (event.type === 'tool/call') use(event.data.call)\n")
      expect(findDataCasts(fake).map(({ file, line }) => `${file}:${line}`)).toEqual([
        'apps/web/src/projection.tsx:1',
        'packages/acp/src/updates.ts:2',
        'test/reader.test.ts:1',
      ])
    } finally {
      rmSync(fake, { recursive: true, force: true })
    }
  })
})
