import { Context } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import SessionService from '../src/index.js'

// A plugin extends the vocabulary by declaration merging; the data type is then checked at compile time.
declare module '../src/index.js' {
  interface SessionEventMap {
    'todo/set': { items: { text: string; done: boolean }[] }
  }
}

describe('extending the vocabulary', () => {
  it('types extension events by declaration merging and accepts them once defined at runtime', async () => {
    const ctx = new Context()
    ctx.plugin(SessionService)
    await new Promise((resolve) => setTimeout(resolve, 0))
    const session = ctx.sessions.create()
    expect(() => session.append('todo/set', { items: [] })).toThrow(
      expect.objectContaining({ code: 'SESSION_EVENT_INVALID' }),
    )
    const dispose = ctx.sessions.defineEvent('todo/set')
    const event = session.append('todo/set', { items: [{ text: 'write tests', done: false }] })
    expect(event.data.items[0]?.text).toBe('write tests')
    // @ts-expect-error: the merged data type is enforced
    expect(() => session.append('todo/set', { items: 'nope' })).not.toThrow()
    dispose()
  })
})
