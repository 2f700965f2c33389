import { execFileSync } from 'node:child_process'
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Snapshots } from '../../src/snapshots/index.js'
import ShadowGitSnapshots from '../../src/snapshots/shadow-git.js'

let root: Context
let fiber: { dispose(): Promise<unknown> }
let home: string
let ws: string
let snapshots: Snapshots

async function setup(config: Record<string, unknown> = {}) {
  root = new Context()
  const plugin = root.plugin(ShadowGitSnapshots, { dir: join(home, 'checkpoints'), ...config })
  await plugin
  fiber = plugin
  snapshots = root.get('snapshots') as Snapshots
}

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-snap-home-'))
  ws = mkdtempSync(join(tmpdir(), 'dsh-snap-ws-'))
  await setup()
})

afterEach(async () => {
  await fiber.dispose()
  rmSync(home, { recursive: true, force: true })
  rmSync(ws, { recursive: true, force: true })
})

const take = () => snapshots.take({ cwd: ws, sessionId: 's1' })

describe('shadow-git snapshots', () => {
  it('restores text, binary, executable and symlinked files byte for byte, and deletes what was added', async () => {
    writeFileSync(join(ws, 'a.txt'), 'one\ntwo\n')
    mkdirSync(join(ws, 'src'))
    const binary = Buffer.from([0, 1, 2, 255, 254, 0, 10, 13])
    writeFileSync(join(ws, 'src', 'blob.bin'), binary)
    writeFileSync(join(ws, 'run.sh'), '#!/bin/sh\necho hi\n')
    chmodSync(join(ws, 'run.sh'), 0o755)
    symlinkSync('a.txt', join(ws, 'link'))
    const before = await take()
    expect(before.files).toBe(4)

    writeFileSync(join(ws, 'a.txt'), 'one\nTWO\nthree\n')
    rmSync(join(ws, 'src', 'blob.bin'))
    chmodSync(join(ws, 'run.sh'), 0o644)
    rmSync(join(ws, 'link'))
    symlinkSync('run.sh', join(ws, 'link'))
    mkdirSync(join(ws, 'new', 'deep'), { recursive: true })
    writeFileSync(join(ws, 'new', 'deep', 'x.bin'), Buffer.from([1, 0, 3]))
    const after = await take()

    const changes = await snapshots.changes(ws, before.id, after.id)
    expect(changes.map((c) => [c.path, c.kind])).toEqual([
      ['a.txt', 'modified'],
      ['link', 'modified'],
      ['new/deep/x.bin', 'added'],
      ['run.sh', 'modified'],
      ['src/blob.bin', 'deleted'],
    ])
    expect(changes.find((c) => c.path === 'a.txt')).toMatchObject({ added: 2, removed: 1 })
    expect(changes.find((c) => c.path === 'new/deep/x.bin')?.added).toBeUndefined()

    const result = await snapshots.restore({ cwd: ws, to: before.id, paths: changes.map((c) => c.path) })
    expect(result.deleted).toEqual(['new/deep/x.bin'])
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('one\ntwo\n')
    expect(readFileSync(join(ws, 'src', 'blob.bin')).equals(binary)).toBe(true)
    expect(lstatSync(join(ws, 'run.sh')).mode & 0o111).not.toBe(0)
    expect(readlinkSync(join(ws, 'link'))).toBe('a.txt')
    expect(existsSync(join(ws, 'new'))).toBe(false)
    expect((await take()).id).toBe(before.id)
  })

  it('honours .gitignore, never touches the workspace .git, and works without a git repository', async () => {
    execFileSync('git', ['init', '-q', ws])
    writeFileSync(join(ws, '.gitignore'), 'build/\n')
    mkdirSync(join(ws, 'build'))
    writeFileSync(join(ws, 'build', 'out.js'), 'x')
    writeFileSync(join(ws, 'main.c'), 'int main;')
    const gitBefore = execFileSync('git', ['-C', ws, 'status', '--porcelain']).toString()
    const snap = await take()
    expect(snap.files).toBe(2)
    expect(execFileSync('git', ['-C', ws, 'status', '--porcelain']).toString()).toBe(gitBefore)
    expect(existsSync(join(ws, '.git', 'index'))).toBe(false)
    rmSync(join(ws, '.git'), { recursive: true })
    writeFileSync(join(ws, 'main.c'), 'int main(void);')
    const next = await take()
    expect((await snapshots.changes(ws, snap.id, next.id)).map((c) => c.path)).toEqual(['main.c'])
    expect(await snapshots.patch(ws, snap.id, next.id)).toContain('+int main(void);')
  })

  it('names files over the size limit as not captured and never restores them', async () => {
    await fiber.dispose()
    await setup({ maxFileBytes: 100 })
    writeFileSync(join(ws, 'small'), 'ok')
    writeFileSync(join(ws, 'big'), 'x'.repeat(200))
    const first = await take()
    expect(first.skipped).toEqual([{ path: 'big', bytes: 200 }])
    writeFileSync(join(ws, 'small'), 'x'.repeat(150))
    const second = await take()
    expect(second.skipped.map((s) => s.path).sort()).toEqual(['big', 'small'])
    expect((await snapshots.changes(ws, first.id, second.id)).map((c) => [c.path, c.kind])).toEqual([
      ['small', 'deleted'],
    ])
  })

  it('refuses a workspace with more files than the limit, with the fix in the message', async () => {
    await fiber.dispose()
    await setup({ maxFiles: 5 })
    for (let i = 0; i < 8; i++) writeFileSync(join(ws, `f${i}`), String(i))
    await expect(take()).rejects.toMatchObject({
      code: 'SNAPSHOT_TOO_LARGE',
      message: expect.stringContaining('.gitignore'),
    })
  })

  it('refuses paths that leave the workspace and ids it does not hold', async () => {
    const snap = await take()
    await expect(snapshots.restore({ cwd: ws, to: snap.id, paths: ['../escape'] })).rejects.toMatchObject({
      code: 'SNAPSHOT_FAILED',
    })
    const outside = mkdtempSync(join(tmpdir(), 'dsh-snap-out-'))
    symlinkSync(outside, join(ws, 'out'))
    await expect(snapshots.restore({ cwd: ws, to: snap.id, paths: ['out/x'] })).rejects.toMatchObject({
      code: 'SNAPSHOT_FAILED',
    })
    expect(existsSync(join(outside, 'x'))).toBe(false)
    rmSync(outside, { recursive: true })
    await expect(snapshots.changes(ws, snap.id, 'f'.repeat(40))).rejects.toMatchObject({ code: 'SNAPSHOT_NOT_FOUND' })
  })
})

describe('dsh home inside the workspace', () => {
  it('never snapshots $DSH_HOME (sessions, checkpoints) when the workspace holds it', async () => {
    const outer = mkdtempSync(join(tmpdir(), 'dsh-snap-outer-'))
    const inner = join(outer, '.dsh')
    mkdirSync(join(inner, 'sessions'), { recursive: true })
    writeFileSync(join(inner, 'sessions', 's.jsonl'), '{}\n')
    writeFileSync(join(outer, 'code.c'), 'int x;')
    const prev = process.env.DSH_HOME
    process.env.DSH_HOME = inner
    const ctx = new Context()
    const plugin = ctx.plugin(ShadowGitSnapshots, {})
    await plugin
    try {
      const snapshots = ctx.get('snapshots') as Snapshots
      const snap = await snapshots.take({ cwd: outer, sessionId: 's' })
      expect(snap.files).toBe(1)
      writeFileSync(join(inner, 'sessions', 's.jsonl'), '{}\n{}\n')
      expect((await snapshots.take({ cwd: outer, sessionId: 's' })).id).toBe(snap.id)
      // The workspace is the home itself: its stores stay out, other files are in.
      writeFileSync(join(inner, 'settings.yaml'), 'a: 1\n')
      expect((await snapshots.take({ cwd: inner, sessionId: 's' })).files).toBe(1)
    } finally {
      if (prev === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = prev
      await plugin.dispose()
      rmSync(outer, { recursive: true, force: true })
    }
  })
})

describe('materialize', () => {
  it('writes a snapshot into an empty folder byte for byte', async () => {
    home = mkdtempSync(join(tmpdir(), 'dsh-snap-home-'))
    ws = mkdtempSync(join(tmpdir(), 'dsh-snap-ws-'))
    await setup()
    mkdirSync(join(ws, 'd'))
    writeFileSync(join(ws, 'd', 'x.bin'), Buffer.from([0, 255, 7]))
    writeFileSync(join(ws, 'a.txt'), 'a\n')
    const snap = await take()
    writeFileSync(join(ws, 'a.txt'), 'changed\n')
    const out = mkdtempSync(join(tmpdir(), 'dsh-snap-out-'))
    await snapshots.materialize(ws, snap.id, out)
    expect(readFileSync(join(out, 'a.txt'), 'utf8')).toBe('a\n')
    expect(readFileSync(join(out, 'd', 'x.bin')).equals(Buffer.from([0, 255, 7]))).toBe(true)
    expect(readdirSync(out).sort()).toEqual(['a.txt', 'd'])
    rmSync(out, { recursive: true })
  })

  it('packs snapshots for another store (another machine), which then diffs and restores them; a damaged pack is refused', async () => {
    writeFileSync(join(ws, 'a.txt'), 'one\n')
    const first = await take()
    writeFileSync(join(ws, 'a.txt'), 'two\n')
    mkdirSync(join(ws, 'src'))
    writeFileSync(join(ws, 'src', 'b.txt'), 'bee\n')
    const second = await take()
    const blob = await snapshots.pack?.(ws, [first.id, second.id])
    expect(blob?.length).toBeGreaterThan(0)
    // Another home: its own checkpoint store, which has never seen this workspace.
    const otherHome = mkdtempSync(join(tmpdir(), 'dsh-snap-other-'))
    const other = new Context()
    const plugin = other.plugin(ShadowGitSnapshots, { dir: join(otherHome, 'checkpoints') })
    await plugin
    try {
      const there = other.get('snapshots') as Snapshots
      await expect(there.changes(ws, first.id, second.id)).rejects.toMatchObject({ code: 'SNAPSHOT_NOT_FOUND' })
      const damaged = Buffer.from(blob as Buffer)
      damaged[damaged.length - 30] = (damaged[damaged.length - 30] as number) ^ 0xff
      await expect(there.unpack?.(ws, damaged, [first.id])).rejects.toMatchObject({ code: 'SNAPSHOT_FAILED' })
      expect(await there.unpack?.(ws, blob as Buffer, [first.id, second.id])).toEqual([first.id, second.id])
      expect(await there.changes(ws, first.id, second.id)).toMatchObject([
        { path: 'a.txt', kind: 'modified' },
        { path: 'src/b.txt', kind: 'added' },
      ])
      await there.restore({ cwd: ws, to: first.id, paths: ['a.txt', 'src/b.txt'] })
      expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('one\n')
      expect(existsSync(join(ws, 'src', 'b.txt'))).toBe(false)
    } finally {
      await plugin.dispose()
      rmSync(otherHome, { recursive: true, force: true })
    }
  })
})
