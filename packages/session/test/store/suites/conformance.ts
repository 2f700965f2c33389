// One behaviour suite that every session store provider must pass: JSONL and SQLite here
// (conformance.test.ts), PostgreSQL in @dsh/session/store-pg, each with its StoreFixture.
import { Context, HarnessError } from '@dsh/kernel'
import type { Session } from '@dsh/session'
import SessionService from '@dsh/session'
import { describe, expect, it } from 'vitest'
import SessionPersistence from '../../../src/store/coordinator.js'
import type { StoredSession, WriteBatch } from '../../../src/store/index.js'
import { append, assistant, boot, type StoreFixture, storePlugin, tempDir, until, user } from '../helpers.js'

function conversation(session: Session, turns: number): void {
  for (let i = 0; i < turns; i++) {
    session.append('turn/start', {})
    session.append('user/message', { message: user(`question ${i}`) }, append)
    session.append('assistant/message', { message: assistant(`answer ${i}`) }, append)
    session.append('turn/end', { reason: 'completed' })
  }
}

export function conformanceSuite(backend: StoreFixture): void {
  describe(`session store conformance: ${backend.name}`, () => {
    it('flush makes every appended event durable; a new process reads back the same log', async () => {
      using dir = tempDir()
      const a = await boot(backend, dir.path)
      const session = a.sessions.create({ id: 's1' })
      conversation(session, 3)
      expect(await a.sessions.flush(session)).toBe(true)
      const events = [...session.events]
      await a.dispose()
      const b = await boot(backend, dir.path)
      const resumed = await b.sessionPersistence.resume('s1')
      expect(resumed.header).toEqual(session.header)
      expect(resumed.events).toEqual(events)
      expect(resumed.deriveMessages()).toEqual(session.deriveMessages())
      expect(b.sessions.get('s1')).toBe(resumed)
      await b.dispose()
    })

    it('writes in bounded batches and in the background before any flush', async () => {
      using dir = tempDir()
      const ctx = await boot(backend, dir.path, { maxBatch: 3, delayMs: 1 })
      const sizes: number[] = []
      const store = ctx.sessionStore as unknown as { backend: { write(id: string, b: WriteBatch): Promise<void> } }
      const write = store.backend.write.bind(store.backend)
      store.backend.write = (id, batch) => {
        sizes.push(batch.events.length)
        return write(id, batch)
      }
      const session = ctx.sessions.create({ id: 'b' })
      for (let i = 0; i < 10; i++) session.append('step/start', {})
      // No flush: the write-behind queue drains on its own.
      const durable = async () => (await ctx.sessionStore.read('b'))?.records.length ?? 0
      for (let waited = 0; (await durable()) < 10 && waited < 5000; waited += 5) {
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      expect(Math.max(...sizes)).toBeLessThanOrEqual(3)
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(10)
      expect((await ctx.sessionStore.read('b'))?.records).toHaveLength(10)
      await ctx.dispose()
    })

    it('a failed write keeps its batch, the flush rejects with the error, and the next flush writes it once', async () => {
      using dir = tempDir()
      const ctx = await boot(backend, dir.path, { delayMs: 1000 })
      const store = ctx.sessionStore as unknown as { backend: { write(id: string, b: WriteBatch): Promise<void> } }
      const write = store.backend.write.bind(store.backend)
      let fail = false
      store.backend.write = (id, batch) => (fail ? Promise.reject(new Error('disk full')) : write(id, batch))
      const session = ctx.sessions.create({ id: 'f' })
      conversation(session, 1)
      await ctx.sessions.flush(session)
      fail = true
      conversation(session, 1)
      const error = await ctx.sessions.flush(session).catch((e: unknown) => e)
      expect(HarnessError.is(error, 'SESSION_PERSIST_FAILED')).toBe(true)
      expect((error as Error).message).toMatch(/disk full/)
      fail = false
      expect(await ctx.sessions.flush(session)).toBe(true)
      const stored = (await ctx.sessionStore.read('f')) as StoredSession
      expect(stored.records).toEqual([...session.events])
      await ctx.dispose()
    })

    it('cold resume closes an open tail with synthetic results, step/end and turn/end interrupted, durably', async () => {
      using dir = tempDir()
      const a = await boot(backend, dir.path)
      const session = a.sessions.create({ id: 'r' })
      session.append('turn/start', {})
      session.append('step/start', {})
      session.append('user/message', { message: user('do two things') }, append)
      session.append(
        'assistant/message',
        {
          message: assistant('', [
            { id: 'c1', name: 'write' },
            { id: 'c2', name: 'read' },
          ]),
        },
        append,
      )
      session.append('tool/call', { call: { type: 'tool-call', id: 'c1', name: 'write', arguments: {} } })
      await a.sessions.flush(session)
      // Simulate a crash: the lease and handles stay as a dead process would leave them.
      await backend.orphanLease(dir.path, 'r')
      const b = await boot(backend, dir.path)
      const resumed = await b.sessionPersistence.resume('r')
      expect(
        resumed.events
          .slice(5)
          .map((e) => [
            e.type,
            e.type === 'tool/result' ? e.data.code : 'reason' in e.data ? e.data.reason : undefined,
          ]),
      ).toEqual([
        ['tool/result', 'TOOL_OUTCOME_UNKNOWN'],
        ['tool/result', 'TOOL_NOT_STARTED'],
        ['step/end', 'interrupted'],
        ['turn/end', 'interrupted'],
      ])
      expect(resumed.isClosed()).toBe(true)
      const stored = (await b.sessionStore.read('r')) as StoredSession
      expect(stored.records).toHaveLength(9)
      resumed.append('turn/start', {})
      expect(await b.sessions.flush(resumed)).toBe(true)
      expect((await b.sessionStore.read('r'))?.records).toHaveLength(10)
      await b.dispose()
      await a.dispose()
    })

    it('one writer per session: a live owner refuses a second opener, closing releases the lease', async () => {
      using dir = tempDir()
      const a = await boot(backend, dir.path)
      const session = a.sessions.create({ id: 'l' })
      conversation(session, 1)
      await a.sessions.flush(session)
      const b = await boot(backend, dir.path)
      const error = await b.sessionPersistence.resume('l').catch((e: unknown) => e)
      expect(HarnessError.is(error, 'SESSION_LEASED')).toBe(true)
      expect((error as HarnessError).message).toContain(`pid ${process.pid}`)
      expect((error as HarnessError).facts.pid).toBe(process.pid)
      await a.sessionPersistence.close(session)
      const resumed = await b.sessionPersistence.resume('l')
      expect(resumed.length).toBe(4)
      await a.dispose()
      await b.dispose()
    })

    it('refuses a newer format with SESSION_FORMAT_UNSUPPORTED naming the location, and a missing session', async () => {
      using dir = tempDir()
      const ctx = await boot(backend, dir.path)
      await ctx.sessionStore.write('new', {
        header: { type: 'session', version: 7, id: 'new', createdAt: 1, cwd: '/' },
        events: [],
        sync: true,
      })
      const error = await ctx.sessionPersistence.resume('new').catch((e: unknown) => e)
      expect(HarnessError.is(error, 'SESSION_FORMAT_UNSUPPORTED')).toBe(true)
      expect((error as Error).message).toContain(ctx.sessionStore.locate('new'))
      await expect(ctx.sessionPersistence.resume('missing')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
      // A refused resume releases the lease.
      await expect(ctx.sessionPersistence.resume('new')).rejects.toMatchObject({ code: 'SESSION_FORMAT_UNSUPPORTED' })
      await ctx.dispose()
    })

    it('persists forks with their lineage and lists sessions from summaries', async () => {
      using dir = tempDir()
      const ctx = await boot(backend, dir.path)
      const parent = ctx.sessions.create({ id: 'p', createdAt: 1000 })
      conversation(parent, 2)
      const child = ctx.sessions.fork(parent, 3, 'c')
      child.append('turn/start', {})
      await ctx.sessions.flush()
      const stored = (await ctx.sessionStore.read('c')) as StoredSession
      expect(stored.header).toMatchObject({ parentSession: 'p', seedLength: 4 })
      expect(stored.records.map((r) => (r as { type: string }).type)).toEqual([
        'turn/start',
        'user/message',
        'assistant/message',
        'turn/end',
        'session/end-seed',
        'turn/start',
      ])
      const list = await ctx.sessionStore.summaries()
      const byId = Object.fromEntries(list.map((s) => [s.id, s]))
      expect(byId.p).toMatchObject({ id: 'p', title: 'question 0', cwd: '/work', createdAt: 1000, eventCount: 8 })
      expect(byId.p?.updatedAt).toBe(parent.events.at(-1)?.time)
      expect(byId.c).toMatchObject({ id: 'c', parentSession: 'p', eventCount: 6, title: 'question 0' })
      await ctx.dispose()
    })

    it('refuses to create a session whose id already exists durably', async () => {
      using dir = tempDir()
      const a = await boot(backend, dir.path)
      a.sessions.close(a.sessions.create({ id: 'dup' }))
      await a.sessionPersistence.flush()
      await a.dispose()
      const b = await boot(backend, dir.path)
      const session = b.sessions.create({ id: 'dup' })
      await expect(b.sessions.flush(session)).rejects.toMatchObject({ code: 'SESSION_EXISTS' })
      await b.dispose()
    })

    it('adopts sessions that were live before the store and coordinator rows started (a provider swap)', async () => {
      using dir = tempDir()
      const ctx = new Context()
      ctx.plugin(SessionService, { cwd: '/work' })
      await until(ctx, 'sessions')
      const session = ctx.sessions.create({ id: 'early' })
      conversation(session, 1)
      const fibers = [
        ctx.plugin(storePlugin(backend), backend.config(dir.path)),
        ctx.plugin(SessionPersistence, { delayMs: 1 }),
      ]
      await until(ctx, 'sessionPersistence')
      await new Promise((resolve) => setTimeout(resolve, 10))
      session.append('turn/start', {})
      expect(await ctx.sessions.flush(session)).toBe(true)
      expect((await ctx.sessionStore.read('early'))?.records).toEqual([...session.events])
      for (const fiber of fibers.reverse()) await fiber.dispose()
    })

    it('dispose flushes what is still queued and releases leases', async () => {
      using dir = tempDir()
      const a = await boot(backend, dir.path, { delayMs: 10_000 })
      const session = a.sessions.create({ id: 'd' })
      conversation(session, 2)
      await a.dispose()
      const b = await boot(backend, dir.path)
      expect((await b.sessionPersistence.resume('d')).length).toBe(8)
      await b.dispose()
    })
  })
}
