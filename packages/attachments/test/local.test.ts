import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, utimes } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { refsIn } from '@dsh/attachments'
import LocalAttachments from '@dsh/attachments/local'
import { Context, HarnessError } from '@dsh/kernel'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { noisyPng, png } from './images.js'

let dir: string
let root: Context

async function boot(config: Record<string, unknown> = {}) {
  root = new Context()
  await root.plugin(LocalAttachments, { dir, ...config })
  return root.attachments
}

async function files(): Promise<string[]> {
  const out: string[] = []
  for (const prefix of await readdir(join(dir, 'sha256')).catch(() => [])) {
    for (const name of await readdir(join(dir, 'sha256', prefix))) out.push(name)
  }
  return out
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dsh-blobs-'))
})
afterEach(async () => {
  await root?.registry.delete(LocalAttachments)
  await rm(dir, { recursive: true, force: true })
})

describe('local attachment store', () => {
  it('stores a PNG under its sha256 and reads the same bytes back', async () => {
    const store = await boot()
    const bytes = await png(40, 30)
    const blob = await store.put(bytes, { name: 'shot.png' })
    const hex = createHash('sha256').update(bytes).digest('hex')
    expect(blob).toMatchObject({ ref: `sha256:${hex}`, mimeType: 'image/png', width: 40, height: 30 })
    expect(blob.original).toBeUndefined()
    expect(await readFile(join(dir, 'sha256', hex.slice(0, 2), hex))).toEqual(Buffer.from(bytes))
    expect(Buffer.from(await store.get(blob.ref))).toEqual(Buffer.from(bytes))
    // The same content is one file.
    await store.put(bytes)
    expect(await files()).toEqual([hex])
  })

  it('refuses what is not an accepted image, too large, or lies about its type, naming the fix', async () => {
    const store = await boot({ maxBytes: 1000 })
    const text = new TextEncoder().encode('just text')
    await expect(store.put(text, { name: 'notes.txt' })).rejects.toMatchObject({
      code: 'ATTACHMENT_TYPE_UNSUPPORTED',
      message: expect.stringContaining('accepted: image/png'),
    })
    await expect(store.put(await noisyPng(40, 40))).rejects.toMatchObject({
      code: 'ATTACHMENT_TOO_LARGE',
      message: expect.stringContaining('raise maxBytes'),
    })
    await expect(store.put(await png(4, 4), { mimeType: 'image/gif' })).rejects.toMatchObject({
      code: 'ATTACHMENT_TYPE_UNSUPPORTED',
    })
    expect(await files()).toEqual([])
  })

  it('scales an image over the edge or byte limit down and states the original size', async () => {
    const store = await boot({ maxImageEdge: 100, maxImageBytes: 20_000 })
    const wide = await store.put(await png(400, 100))
    expect(wide).toMatchObject({ width: 100, height: 25, original: { width: 400, height: 100 } })
    const heavy = await store.put(await noisyPng(100, 100))
    expect(heavy.bytes).toBeLessThanOrEqual(20_000)
    expect(heavy.original).toMatchObject({ width: 100, height: 100 })
    // What is stored is the scaled image, and it hashes to its ref.
    const stored = await store.get(heavy.ref)
    expect(`sha256:${createHash('sha256').update(stored).digest('hex')}`).toBe(heavy.ref)
  })

  it('names a missing blob and rejects refs that are not sha256', async () => {
    const store = await boot()
    await expect(store.get(`sha256:${'0'.repeat(64)}`)).rejects.toMatchObject({ code: 'ATTACHMENT_NOT_FOUND' })
    await expect(store.get('../../etc/passwd')).rejects.toBeInstanceOf(HarnessError)
  })

  it('sweeps unreferenced blobs older than the grace period and keeps the rest', async () => {
    const store = await boot()
    const a = await store.put(await png(5, 5, '#ff0000'))
    const b = await store.put(await png(5, 5, '#00ff00'))
    const c = await store.put(await png(5, 5, '#0000ff'))
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000)
    for (const blob of [a, b]) {
      const hex = blob.ref.slice(7)
      await utimes(join(dir, 'sha256', hex.slice(0, 2), hex), old, old)
    }
    const report = await store.sweep(new Set([a.ref]))
    expect(report).toEqual({ removed: [b.ref], keptYoung: 1 })
    expect((await store.list()).sort()).toEqual([a.ref, c.ref].sort())
  })

  it('finds image refs anywhere in events', () => {
    const ref = `sha256:${'a'.repeat(64)}`
    const events = [
      { type: 'user/message', data: { message: { content: [{ type: 'image', ref, mimeType: 'image/png' }] } } },
      { type: 'tool/result', data: { result: { content: [{ type: 'text', text: 'sha256:not-an-image' }] } } },
    ]
    expect([...refsIn(events)]).toEqual([ref])
  })
})
