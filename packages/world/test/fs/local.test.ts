import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, HarnessError } from '@dsh/kernel'
import { afterEach, describe, expect, it } from 'vitest'
import type { FileVersion } from '../../src/fs/index.js'
import LocalFs from '../../src/fs/local.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-fs-'))
  dirs.push(dir)
  const root = new Context()
  await root.plugin(LocalFs, { cwd: dir })
  return { root, dir, fs: root.fs }
}

const code = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    return HarnessError.is(error) ? error.code : String(error)
  }
  return 'resolved'
}

describe('ctx.fs (local)', () => {
  it('reads UTF-8 text with a version and refuses NUL bytes, invalid UTF-8, directories and missing files', async () => {
    const { fs, dir } = await setup()
    writeFileSync(join(dir, 'a.txt'), 'héllo\n')
    writeFileSync(join(dir, 'bin'), Buffer.from([104, 0, 105]))
    writeFileSync(join(dir, 'latin1'), Buffer.from([0xe9, 0x0a]))
    const file = await fs.readText('a.txt')
    expect(file).toMatchObject({ path: join(dir, 'a.txt'), text: 'héllo\n', size: 7 })
    expect(await fs.version('a.txt')).toBe(file.version)
    expect(await code(fs.readText('bin'))).toBe('FS_NOT_TEXT')
    expect(await code(fs.readText('latin1'))).toBe('FS_NOT_TEXT')
    expect(await code(fs.readText('.'))).toBe('FS_IS_DIRECTORY')
    expect(await code(fs.readText('missing'))).toBe('FS_NOT_FOUND')
    expect(await code(fs.readText('a.txt', { maxBytes: 3 }))).toBe('FS_TOO_LARGE')
  })

  it('reads bytes only with an explicit bound', async () => {
    const { fs, dir } = await setup()
    writeFileSync(join(dir, 'b'), Buffer.from([1, 2, 3, 4]))
    const read = await fs.readBytes('b', { maxBytes: 2 })
    expect([...read.bytes]).toEqual([1, 2])
    expect(read).toMatchObject({ size: 4, truncated: true })
    expect(await code(fs.readBytes('b', {} as { maxBytes: number }))).toBe('FS_READ_UNBOUNDED')
  })

  it('lists and stats', async () => {
    const { fs, dir } = await setup()
    mkdirSync(join(dir, 'sub'))
    writeFileSync(join(dir, 'z.txt'), 'z')
    expect(await fs.list('.')).toEqual([
      { name: 'sub', kind: 'directory' },
      { name: 'z.txt', kind: 'file' },
    ])
    expect(await fs.stat('z.txt')).toMatchObject({ kind: 'file', size: 1 })
    expect(await fs.stat('nothing')).toBeUndefined()
    expect(await code(fs.list('z.txt'))).toBe('FS_NOT_DIRECTORY')
  })

  it('writes with createIfAbsent and replaceIfVersion guards, atomically, keeping the file mode', async () => {
    const { fs, dir } = await setup()
    const created = await fs.writeText('new/deep/f.txt', 'one\n', { kind: 'createIfAbsent' })
    expect(created).toMatchObject({ created: true, path: join(dir, 'new/deep/f.txt') })
    expect(await code(fs.writeText('new/deep/f.txt', 'x', { kind: 'createIfAbsent' }))).toBe('FS_EXISTS')
    const stale = 'deadbeef-1' as FileVersion
    expect(await code(fs.writeText('new/deep/f.txt', 'x', { kind: 'replaceIfVersion', version: stale }))).toBe(
      'FS_VERSION_CONFLICT',
    )
    const replaced = await fs.writeText('new/deep/f.txt', 'two\n', {
      kind: 'replaceIfVersion',
      version: created.version,
    })
    expect(replaced).toMatchObject({ created: false, previous: 'one\n' })
    expect(readFileSync(join(dir, 'new/deep/f.txt'), 'utf8')).toBe('two\n')
    writeFileSync(join(dir, 'script.sh'), '#!/bin/sh\n', { mode: 0o755 })
    await fs.writeText('script.sh', '#!/bin/sh\necho\n', { kind: 'overwrite' })
    expect(statSync(join(dir, 'script.sh')).mode & 0o777).toBe(0o755)
    expect(readdirSync(join(dir, 'new/deep'))).toEqual(['f.txt'])
  })

  it('edits literally: unique unless replaceAll, no regex or $ patterns, CRLF tolerant', async () => {
    const { fs, dir } = await setup()
    writeFileSync(join(dir, 'e.ts'), 'a = 1\nb = 1\n')
    expect(await code(fs.editText('e.ts', [{ oldText: '= 1', newText: '= 2' }]))).toBe('FS_EDIT_AMBIGUOUS')
    expect(await code(fs.editText('e.ts', [{ oldText: 'zzz', newText: 'y' }]))).toBe('FS_EDIT_NO_MATCH')
    expect(await code(fs.editText('e.ts', [{ oldText: '', newText: 'y' }]))).toBe('FS_EDIT_INVALID')
    const all = await fs.editText('e.ts', [{ oldText: '= 1', newText: '= $&2', replaceAll: true }])
    expect(all).toMatchObject({ replacements: 2, after: 'a = $&2\nb = $&2\n', before: 'a = 1\nb = 1\n' })
    writeFileSync(join(dir, 'w.txt'), 'x\r\ny\r\n')
    await fs.editText('w.txt', [{ oldText: 'x\ny', newText: 'x\nz' }])
    expect(readFileSync(join(dir, 'w.txt'), 'utf8')).toBe('x\r\nz\r\n')
  })

  it('of two concurrent edits of the same text exactly one wins', async () => {
    const { fs, dir } = await setup()
    writeFileSync(join(dir, 'c.txt'), 'value = 0\n')
    const { version } = await fs.readText('c.txt')
    const results = await Promise.allSettled([
      fs.editText('c.txt', [{ oldText: 'value = 0', newText: 'value = 1' }], { expectedVersion: version }),
      fs.editText(join(dir, 'c.txt'), [{ oldText: 'value = 0', newText: 'value = 2' }], { expectedVersion: version }),
    ])
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    const loser = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
    expect((loser.reason as HarnessError).code).toBe('FS_VERSION_CONFLICT')
    expect(['value = 1\n', 'value = 2\n']).toContain(readFileSync(join(dir, 'c.txt'), 'utf8'))
    // Without version guards the literal match decides: the second finds nothing to replace.
    writeFileSync(join(dir, 'd.txt'), 'n = 0\n')
    const plain = await Promise.allSettled(
      [1, 2, 3].map((n) => fs.editText('d.txt', [{ oldText: 'n = 0', newText: `n = ${n}` }])),
    )
    expect(plain.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
  })

  it('globs and greps, honouring nested .gitignore files and skipping .git', async () => {
    const { fs, dir } = await setup()
    const put = (path: string, text: string) => {
      mkdirSync(join(dir, path, '..'), { recursive: true })
      writeFileSync(join(dir, path), text)
    }
    put('.gitignore', 'dist/\n*.log\n')
    put('src/a.ts', 'export const needle = 1\n')
    put('src/lib/b.ts', 'const x = 2 // Needle\n')
    put('src/lib/.gitignore', 'gen.ts\n')
    put('src/lib/gen.ts', 'needle\n')
    put('dist/a.js', 'needle\n')
    put('debug.log', 'needle\n')
    put('.git/config', 'needle\n')
    put('node_modules/m/index.js', 'needle\n')
    const ts = await fs.glob('**/*.ts')
    expect(ts.paths.sort()).toEqual(['src/a.ts', 'src/lib/b.ts'])
    expect((await fs.glob('*.ts')).paths.sort()).toEqual(['src/a.ts', 'src/lib/b.ts'])
    expect((await fs.glob('src/*.ts')).paths).toEqual(['src/a.ts'])
    expect((await fs.glob('**/*.log', { includeIgnored: true })).paths).toEqual(['debug.log'])
    const grep = await fs.grep('needle', '.', { ignoreCase: true })
    expect(grep.matches).toEqual([
      { path: 'src/a.ts', line: 1, text: 'export const needle = 1' },
      { path: 'src/lib/b.ts', line: 1, text: 'const x = 2 // Needle' },
    ])
    expect((await fs.grep('needle', 'src', { include: 'a.ts' })).matches).toEqual([
      { path: 'a.ts', line: 1, text: 'export const needle = 1' },
    ])
    expect((await fs.grep('x', '.', { limit: 0 })).truncated).toBe(true)
    expect(await code(fs.grep('(', '.'))).toBe('FS_INVALID_PATTERN')
    expect((await fs.grep('export const needle \\= 1', 'src')).matches).toHaveLength(1)
  })
})
