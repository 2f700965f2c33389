import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createStaticAnswerer } from '@dsh/agent/approval'
import { describe, expect, it } from 'vitest'
import { createWorld, textOf } from './harness.js'

const outside = () => mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : process.cwd(), 'dsh-outside-'))

describe('file tools', () => {
  it('read numbers lines and pages with offset/limit', async () => {
    await using world = await createWorld()
    writeFileSync(join(world.ws, 'a.txt'), 'one\ntwo\nthree\n')
    const full = await world.call('read', { path: 'a.txt' })
    expect(textOf(full)).toBe('    1\tone\n    2\ttwo\n    3\tthree')
    const window = await world.call('read', { path: 'a.txt', offset: 2, limit: 1 })
    expect(textOf(window)).toBe('    2\ttwo\n[lines 2-2 of 3; continue with offset=3]')
    const missing = await world.call('read', { path: 'b.txt' })
    expect(missing).toMatchObject({ isError: true, errorCode: 'FS_NOT_FOUND' })
    expect(textOf(missing)).toMatch(/^File not found: .*b\.txt\. Did you mean: .*a\.txt\?/)
    writeFileSync(join(world.ws, 'bin'), Buffer.from([0, 1, 2]))
    expect(textOf(await world.call('read', { path: 'bin' }))).toMatch(/^Not a text file:/)
    expect(textOf(await world.call('read', { path: '.' }))).toMatch(/^Is a directory:/)
  })

  it('edit needs a prior read, returns a diff, and refuses a file changed on disk since', async () => {
    await using world = await createWorld()
    const file = join(world.ws, 'm.ts')
    writeFileSync(file, 'export const x = 1\nexport const y = 2\n')
    const blind = await world.call('edit', { path: 'm.ts', old_string: 'x = 1', new_string: 'x = 10' })
    expect(blind).toMatchObject({ isError: true, errorCode: 'FS_NOT_OBSERVED' })
    expect(textOf(blind)).toMatch(/^\[not read\] .*Read it with the read tool first/)
    await world.call('read', { path: 'm.ts' })
    const edited = await world.call('edit', { path: 'm.ts', old_string: 'x = 1', new_string: 'x = 10' })
    expect(edited.isError).toBe(false)
    expect(textOf(edited)).toContain('-export const x = 1\n+export const x = 10')
    // Our own edit refreshed the observation: a second edit needs no new read.
    expect((await world.call('edit', { path: 'm.ts', old_string: 'y = 2', new_string: 'y = 20' })).isError).toBe(false)
    writeFileSync(file, 'export const x = 99\n')
    const stale = await world.call('edit', { path: 'm.ts', old_string: 'x = 99', new_string: 'x = 3' })
    expect(stale).toMatchObject({ isError: true, errorCode: 'FS_VERSION_CONFLICT' })
    expect(textOf(stale)).toMatch(/^\[changed on disk\].*Read it again/)
    expect(readFileSync(file, 'utf8')).toBe('export const x = 99\n')
    await world.call('read', { path: 'm.ts' })
    const ambiguous = await world.call('edit', { path: 'm.ts', old_string: 'x', new_string: 'X' })
    expect(textOf(ambiguous)).toMatch(/^\[ambiguous\] old_string occurs \d+ times/)
    expect(textOf(await world.call('edit', { path: 'm.ts', old_string: 'nope', new_string: 'x' }))).toMatch(
      /^\[no match\]/,
    )
    const all = await world.call('edit', { path: 'm.ts', old_string: 'x', new_string: 'X', replace_all: true })
    expect(textOf(all)).toMatch(/replacements\)/)
  })

  it('write creates new files, needs a read to overwrite, and reports sandbox denials with the escalation route', async () => {
    await using world = await createWorld()
    const created = await world.call('write', { path: 'src/new.ts', content: 'a\nb\n' })
    expect(textOf(created)).toBe(`Created ${join(world.ws, 'src/new.ts')} (2 lines).`)
    writeFileSync(join(world.ws, 'old.txt'), 'old')
    expect(textOf(await world.call('write', { path: 'old.txt', content: 'new' }))).toMatch(/^\[not read\]/)
    await world.call('read', { path: 'old.txt' })
    expect((await world.call('write', { path: 'old.txt', content: 'new' })).isError).toBe(false)
    expect(readFileSync(join(world.ws, 'old.txt'), 'utf8')).toBe('new')

    const out = outside()
    try {
      const denied = await world.call('write', { path: join(out, 'x.txt'), content: 'x' })
      expect(denied).toMatchObject({ isError: true, errorCode: 'FS_SANDBOX_DENIED' })
      expect(textOf(denied)).toMatch(
        /^\[sandbox: denied by the workspace-write sandbox; writable: .*sandbox_permissions.*"danger-full-access"/,
      )
      // Escalation without an answerer: refused, nothing written.
      const asked = {
        path: join(out, 'x.txt'),
        content: 'x',
        sandbox_permissions: 'danger-full-access',
        justification: 'the user asked for it',
      }
      const refused = await world.call('write', asked)
      expect(refused).toMatchObject({ isError: true, errorCode: 'SANDBOX_ESCALATION_DENIED' })
      expect(textOf(refused)).toMatch(/^\[escalation refused\]/)
      expect(existsSync(join(out, 'x.txt'))).toBe(false)
      // Approved once: this call succeeds; the next call without it is denied again.
      world.root.approval.answer(createStaticAnswerer('allowed-once'))
      const granted = await world.call('write', asked)
      expect(textOf(granted)).toBe(`Created ${join(out, 'x.txt')} (1 lines).`)
      expect(readFileSync(join(out, 'x.txt'), 'utf8')).toBe('x')
      expect((await world.call('write', { path: join(out, 'y.txt'), content: 'y' })).errorCode).toBe(
        'FS_SANDBOX_DENIED',
      )
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  })

  it('read-only mode (switched per session) refuses writes and edits', async () => {
    await using world = await createWorld()
    writeFileSync(join(world.ws, 'f.txt'), 'f')
    world.root.sandboxPolicy.setMode('s1', 'read-only')
    expect(world.session.events.at(-1)).toMatchObject({ type: 'sandbox/mode', data: { mode: 'read-only' } })
    await world.call('read', { path: 'f.txt' })
    const write = await world.call('write', { path: 'g.txt', content: 'g' })
    expect(textOf(write)).toMatch(/^\[sandbox: denied by the read-only sandbox; writable: nothing\]/)
    expect((await world.call('edit', { path: 'f.txt', old_string: 'f', new_string: 'F' })).errorCode).toBe(
      'FS_SANDBOX_DENIED',
    )
    expect(existsSync(join(world.ws, 'g.txt'))).toBe(false)
  })

  it('ls, glob and grep respect .gitignore and bound their output', async () => {
    await using world = await createWorld()
    mkdirSync(join(world.ws, 'src'))
    writeFileSync(join(world.ws, '.gitignore'), 'build/\n')
    mkdirSync(join(world.ws, 'build'))
    writeFileSync(join(world.ws, 'build/out.ts'), 'needle')
    writeFileSync(join(world.ws, 'src/a.ts'), 'const needle = 1\n')
    expect(textOf(await world.call('ls', {}))).toBe(`${world.ws}:\n.gitignore\nbuild/\nsrc/`)
    expect(textOf(await world.call('glob', { pattern: '**/*.ts' }))).toBe('src/a.ts')
    expect(textOf(await world.call('glob', { pattern: '*.py' }))).toMatch(/^No files found/)
    expect(textOf(await world.call('grep', { pattern: 'needle' }))).toBe('src/a.ts:1: const needle = 1')
    expect(textOf(await world.call('grep', { pattern: '(' }))).toMatch(/^Invalid pattern:/)
    for (let i = 0; i < 250; i++) writeFileSync(join(world.ws, `src/f${i}.ts`), 'needle\n')
    expect(textOf(await world.call('glob', { pattern: 'src/*.ts' }))).toMatch(/\[truncated: more than 200 files match/)
    expect(textOf(await world.call('grep', { pattern: 'needle' }))).toMatch(/\[truncated: more than 200 matches/)
  })

  it('spills a large result to a private per-session file and shows head, tail and the path', async () => {
    await using world = await createWorld({ maxInlineBytes: 2000 })
    const lines = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`)
    writeFileSync(join(world.ws, 'big.txt'), `${lines.join('\n')}\n`)
    const text = textOf(await world.call('read', { path: 'big.txt' }))
    expect(Buffer.byteLength(text)).toBeLessThan(2400)
    expect(text).toMatch(/^ {4}1\tline 1\n/)
    const path = /saved in (\S+);/.exec(text)?.[1] as string
    expect(path).toMatch(/dsh-spill-.*\/session-[0-9a-f]{12}\//)
    expect(readFileSync(path, 'utf8')).toContain(' 2000\tline 2000')
    expect(text.trimEnd().endsWith('[lines 1-2000 of 3000; continue with offset=2001]')).toBe(true)
  })
})
