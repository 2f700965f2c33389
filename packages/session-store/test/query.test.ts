import { describe, expect, it } from 'vitest'
import SessionQueryService from '../src/query.js'
import { append, assistant, type Backend, boot, tempDir, until, user } from './helpers.js'

for (const backend of ['jsonl', 'sqlite'] as Backend[]) {
  describe(`ctx.sessionQuery on ${backend}`, () => {
    it('lists durable sessions with title, cwd, times, lineage and event count', async () => {
      using dir = tempDir()
      const ctx = await boot(backend, dir.path, {}, [[SessionQueryService, {}]])
      await until(ctx, 'sessionQuery')
      const a = ctx.sessions.create({ id: 'a', createdAt: 10 })
      a.append('user/message', { message: user('  fix the\nflaky test  ') }, append)
      a.append('assistant/message', { message: assistant('done') }, append)
      ctx.sessions.fork(a, undefined, 'b')
      await ctx.sessions.flush()
      const list = await ctx.sessionQuery.list()
      expect(list.map((s) => s.id).sort()).toEqual(['a', 'b'])
      expect(list.find((s) => s.id === 'a')).toMatchObject({
        title: 'fix the flaky test',
        cwd: '/work',
        createdAt: 10,
        eventCount: 2,
      })
      expect(list.find((s) => s.id === 'b')).toMatchObject({ parentSession: 'a', eventCount: 3 })
      expect((await ctx.sessionQuery.read('a')).deriveMessages()).toHaveLength(2)
      await expect(ctx.sessionQuery.search('flaky')).rejects.toMatchObject({ code: 'SESSION_SEARCH_DISABLED' })
      await ctx.dispose()
    })

    it('searches an opt-in FTS5 index built from the logs, refreshed incrementally and rebuildable', async () => {
      using dir = tempDir()
      const ctx = await boot(backend, dir.path, {}, [[SessionQueryService, { search: {} }]])
      await until(ctx, 'sessionQuery')
      const a = ctx.sessions.create({ id: 'a' })
      a.append('user/message', { message: user('the parser drops unicode') }, append)
      await ctx.sessions.flush()
      expect(await ctx.sessionQuery.search('parser')).toEqual([
        { sessionId: 'a', seq: 0, type: 'user/message', snippet: 'the [parser] drops unicode' },
      ])
      a.append('assistant/message', { message: assistant('fixed the parser" OR (') }, append)
      await ctx.sessions.flush()
      expect((await ctx.sessionQuery.search('parser')).map((h) => h.seq).sort()).toEqual([0, 1])
      expect(await ctx.sessionQuery.search('nothing-like-this')).toEqual([])
      expect(await ctx.sessionQuery.rebuildIndex()).toBe(2)
      expect(await ctx.sessionQuery.search('unicode')).toHaveLength(1)
      await ctx.dispose()
    })
  })
}

describe('sqlite schema version', () => {
  it('refuses a database written by a newer dsh', async () => {
    using dir = tempDir()
    const Database = (await import('better-sqlite3')).default
    const db = new Database(`${dir.path}/sessions.sqlite`)
    db.pragma('user_version = 99')
    db.close()
    const { SqliteBackend } = await import('../src/sqlite.js')
    expect(() => new SqliteBackend(`${dir.path}/sessions.sqlite`, dir.path)).toThrow(
      expect.objectContaining({ code: 'SESSION_STORE_SCHEMA_UNSUPPORTED', message: expect.stringContaining('99') }),
    )
  })

  it('uses WAL', async () => {
    using dir = tempDir()
    const { SqliteBackend } = await import('../src/sqlite.js')
    const backend = new SqliteBackend(`${dir.path}/s.sqlite`, dir.path)
    backend.close()
    const Database = (await import('better-sqlite3')).default
    const db = new Database(`${dir.path}/s.sqlite`)
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(db.pragma('user_version', { simple: true })).toBe(1)
    db.close()
  })
})

describe('listing JSONL sessions', () => {
  it('answers from the meta sidecar without reading the log, and rescans when the sidecar is stale', async () => {
    const { readFileSync, writeFileSync, appendFileSync } = await import('node:fs')
    using dir = tempDir()
    const ctx = await boot('jsonl', dir.path, {}, [[SessionQueryService, {}]])
    await until(ctx, 'sessionQuery')
    const session = ctx.sessions.create({ id: 'm' })
    session.append('user/message', { message: user('the title') }, append)
    await ctx.sessionPersistence.close(session)
    const path = ctx.sessionStore.locate('m')
    // Same size, unreadable middle: only a reader of the whole log would notice.
    const bytes = readFileSync(path)
    bytes.fill(0x20, 80, 90)
    writeFileSync(path, bytes)
    expect(await ctx.sessionQuery.list()).toMatchObject([{ id: 'm', title: 'the title', eventCount: 1 }])
    // A different size makes the sidecar stale: the list rescans and reports what it cannot read.
    appendFileSync(path, ' ')
    expect(await ctx.sessionQuery.list()).toMatchObject([
      { id: 'm', error: expect.stringContaining('SESSION_CORRUPT') },
    ])
    await ctx.dispose()
  })
})
