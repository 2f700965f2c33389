// The hash chain on every store (issue 37): a session written in two processes (the second resumes
// and appends) verifies whole; an event changed in place (behind the store's back, its checksum redone
// where it has one) or deleted is named by `verify`.
import { describe, expect, it } from 'vitest'
import { append, assistant, boot, type StoreFixture, tempDir, user } from '../helpers.js'

/** Changes event `seq` of session `id` as someone with the storage in hand would. */
export interface Tamper {
  flip(dir: string, id: string, seq: number): Promise<void>
  remove(dir: string, id: string, seq: number): Promise<void>
}

export function chainSuite(fixture: StoreFixture, tamper: Tamper): void {
  describe(`${fixture.name}: the hash chain`, () => {
    async function written(dir: string, id: string) {
      const a = await boot(fixture, dir)
      const session = a.sessions.create({ id })
      for (let i = 0; i < 3; i++) session.append('user/message', { message: user(`first ${i}`) }, append)
      await a.sessionPersistence.close(session)
      await a.dispose()
      const b = await boot(fixture, dir)
      const resumed = await b.sessionPersistence.resume(id)
      for (let i = 0; i < 3; i++) resumed.append('user/message', { message: user(`second ${i}`) }, append)
      await b.sessionPersistence.close(resumed)
      return b
    }

    it('verifies a session appended by two processes, and names a changed event', async () => {
      using dir = tempDir()
      const ctx = await written(dir.path, 'chained')
      try {
        const verdict = await ctx.sessionStore.verify?.('chained')
        expect(verdict).toMatchObject({ ok: true, events: 6, unchained: 0 })
        await tamper.flip(dir.path, 'chained', 4)
        expect(await ctx.sessionStore.verify?.('chained')).toMatchObject({ ok: false, seq: 4, kind: 'altered' })
      } finally {
        await ctx.dispose()
      }
    })

    it('keeps the session list’s running sums: messages and cost per model, across processes', async () => {
      using dir = tempDir()
      const priced = (usd: number) => ({
        message: {
          ...assistant('ok'),
          provider: 'p',
          model: 'm',
          usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 },
        },
        cost: { usd },
      })
      const a = await boot(fixture, dir.path)
      const session = a.sessions.create({ id: 'summed' })
      session.append('user/message', { message: user('one') }, append)
      session.append('assistant/message', priced(0.25), append)
      await a.sessionPersistence.close(session)
      await a.dispose()
      const b = await boot(fixture, dir.path)
      try {
        const resumed = await b.sessionPersistence.resume('summed')
        resumed.append('user/message', { message: user('two') }, append)
        resumed.append('assistant/message', priced(0.5), append)
        await b.sessionPersistence.close(resumed)
        const [summary] = (await b.sessionStore.summaries()).filter((row) => row.id === 'summed')
        expect(summary).toMatchObject({
          messageCount: 4,
          cost: { usd: 0.75, requests: 2, unknownRequests: 0, models: { 'p:m': { usd: 0.75, requests: 2 } } },
        })
      } finally {
        await b.dispose()
      }
    })

    it('names a deleted event', async () => {
      using dir = tempDir()
      const ctx = await written(dir.path, 'gap')
      try {
        await tamper.remove(dir.path, 'gap', 2)
        expect(await ctx.sessionStore.verify?.('gap')).toMatchObject({ ok: false, seq: 2, kind: 'missing' })
      } finally {
        await ctx.dispose()
      }
    })
  })
}
