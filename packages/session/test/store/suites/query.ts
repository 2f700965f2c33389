// The query-service suite every store provider passes (list, read, full-text search): the local
// providers in query.test.ts, PostgreSQL (its own tsvector search) in @dsh/session/store-pg.
import { describe, expect, it } from 'vitest'
import SessionQueryService from '../../../src/store/query.js'
import { append, assistant, boot, type StoreFixture, tempDir, until, user } from '../helpers.js'

export function querySuite(backend: StoreFixture): void {
  describe(`ctx.sessionQuery on ${backend.name}`, () => {
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

    it('searches an opt-in full-text index of the logs, kept up to date and rebuildable', async () => {
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

    it('refuses a search limit that is not a whole number of at least 1', async () => {
      using dir = tempDir()
      const ctx = await boot(backend, dir.path, {}, [[SessionQueryService, { search: {} }]])
      await until(ctx, 'sessionQuery')
      const a = ctx.sessions.create({ id: 'a' })
      a.append('user/message', { message: user('parser one') }, append)
      a.append('assistant/message', { message: assistant('parser two') }, append)
      await ctx.sessions.flush()
      // SQLite reads LIMIT -1 as "no limit"; PostgreSQL errors on it: refused before either sees it.
      for (const limit of [0, -1, 1.5, Number.NaN]) {
        await expect(ctx.sessionQuery.search('parser', { limit })).rejects.toMatchObject({
          code: 'SESSION_SEARCH_LIMIT_INVALID',
        })
      }
      expect(await ctx.sessionQuery.search('parser', { limit: 1 })).toHaveLength(1)
      await ctx.dispose()
    })
  })
}
