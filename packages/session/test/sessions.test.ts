import { Context, HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import SessionService, { type Session, type SessionEvent } from '../src/index.js'
import { assistant, user } from './helpers.js'

async function setup() {
  const ctx = new Context()
  ctx.plugin(SessionService, { cwd: '/work' })
  await new Promise((resolve) => setTimeout(resolve, 0))
  return ctx
}

describe('ctx.sessions', () => {
  it('creates sessions with a header, dense seqs, millisecond times and deep-frozen events', async () => {
    const ctx = await setup()
    const session = ctx.sessions.create({ id: 's1', createdAt: 5 })
    expect(session.header).toEqual({ type: 'session', version: 0, id: 's1', createdAt: 5, cwd: '/work' })
    const a = session.append('turn/start', {})
    const b = session.append('user/message', { message: user('hi') }, { surfaceOp: { op: 'append' } })
    expect([a.seq, b.seq]).toEqual([0, 1])
    expect(Number.isInteger(b.time)).toBe(true)
    expect(Object.isFrozen(b)).toBe(true)
    expect(Object.isFrozen(b.data.message.content[0])).toBe(true)
    expect(ctx.sessions.get('s1')).toBe(session)
    expect(ctx.sessions.list()).toEqual([session])
  })

  it('copies event data so the caller keeps a mutable object and the log a frozen one', async () => {
    const ctx = await setup()
    const session = ctx.sessions.create()
    const message = user('x')
    session.append('user/message', { message }, { surfaceOp: { op: 'append' } })
    message.content.push({ type: 'text', text: 'later' })
    expect(session.deriveMessages()).toEqual([user('x')])
  })

  it('refuses data that JSON cannot hold losslessly, unknown types and wrong surface ops', async () => {
    const ctx = await setup()
    const session = ctx.sessions.create()
    const code = (fn: () => unknown) => {
      try {
        fn()
      } catch (error) {
        return HarnessError.is(error) ? error.code : String(error)
      }
    }
    expect(code(() => session.append('turn/end', { reason: 'completed', message: Number.NaN as never }))).toBe(
      'SESSION_EVENT_INVALID',
    )
    expect(code(() => session.append('request/context', { contextWindow: new Date() as never }))).toBe(
      'SESSION_EVENT_INVALID',
    )
    expect(code(() => session.appendUntyped('plugin/thing', {}))).toBe('SESSION_EVENT_INVALID')
    expect(code(() => session.append('user/message', { message: user('x') }))).toBe('SESSION_EVENT_INVALID')
    expect(code(() => session.append('turn/start', {}, { surfaceOp: { op: 'append' } }))).toBe('SESSION_EVENT_INVALID')
    expect(
      code(() =>
        session.append('user/message', { message: user('x') }, { surfaceOp: { op: 'replace', start: 0, end: 0 } }),
      ),
    ).toBe('SESSION_EVENT_INVALID')
    expect(code(() => session.append('turn/end', { reason: 'bored' as never }))).toBe('SESSION_EVENT_INVALID')
    expect(session.length).toBe(0)
    expect(session.appendUntyped('plugin/thing', { a: 1 }, { ignorable: true }).seq).toBe(0)
  })

  it('emits session/event after each commit; a failing listener never un-commits or starves later listeners', async () => {
    const ctx = await setup()
    const seen: [string, number, number][] = []
    ctx.on('session/event', () => {
      throw new Error('listener bug')
    })
    ctx.on('session/event', (session: Session, event: SessionEvent) => {
      seen.push([session.id, event.seq, session.length])
    })
    const session = ctx.sessions.create({ id: 'e' })
    session.append('turn/start', {})
    session.append('turn/end', { reason: 'completed' })
    expect(seen).toEqual([
      ['e', 0, 1],
      ['e', 1, 2],
    ])
    expect(session.length).toBe(2)
  })

  it('closes the sessions of a disposed plugin and emits session/closed', async () => {
    const ctx = await setup()
    const closed: string[] = []
    ctx.on('session/closed', (session: Session) => {
      closed.push(session.id)
    })
    let created: Session | undefined
    const fiber = ctx.plugin({
      name: 'owner',
      inject: ['sessions'],
      apply(child: Context) {
        created = child.sessions.create({ id: 'owned' })
      },
    })
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(created?.id).toBe('owned')
    expect(ctx.sessions.get('owned')).toBe(created)
    await fiber.dispose()
    expect(ctx.sessions.get('owned')).toBeUndefined()
    expect(closed).toEqual(['owned'])
    ctx.sessions.create({ id: 'owned' })
    expect(() => ctx.sessions.create({ id: 'owned' })).toThrow(/already live/)
  })

  it('reports flush false without persistence and runs the checkpoint serial event', async () => {
    const ctx = await setup()
    const session = ctx.sessions.create()
    expect(await ctx.sessions.flush(session)).toBe(false)
    const boundaries: string[] = []
    ctx.on('session/checkpoint', ({ boundary }) => {
      boundaries.push(boundary)
    })
    await ctx.sessions.checkpoint(session, 'tool-body', 'bash')
    expect(boundaries).toEqual(['tool-body'])
    ctx.sessions.addFlushParticipant(async () => {})
    expect(await ctx.sessions.flush(session)).toBe(true)
  })

  it('keeps empty assistant messages on the surface but out of the derived messages', async () => {
    const ctx = await setup()
    const session = ctx.sessions.create()
    session.append('user/message', { message: user('q') }, { surfaceOp: { op: 'append' } })
    session.append('assistant/message', { message: assistant('') }, { surfaceOp: { op: 'append' } })
    expect(session.surface()).toEqual([0, 1])
    expect(session.deriveMessages()).toEqual([user('q')])
  })

  it('refuses unsafe session ids', async () => {
    const ctx = await setup()
    expect(() => ctx.sessions.create({ id: '../x' })).toThrow(expect.objectContaining({ code: 'SESSION_ID_INVALID' }))
  })
})

describe('the surface-projection invariant', () => {
  it('is registered with ctx.invariants and holds for live sessions', async () => {
    const { InvariantsService } = await import('@dsh/kernel')
    const ctx = new Context()
    ctx.plugin(InvariantsService)
    ctx.plugin(SessionService)
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(ctx.invariants.list()).toContain('@dsh/session/surface-projection')
    const session = ctx.sessions.create()
    session.append('user/message', { message: user('a') }, { surfaceOp: { op: 'append' } })
    session.append('user/message', { message: user('b') }, { surfaceOp: { op: 'replace', start: 0, end: 0 } })
    expect(ctx.invariants.run()).toEqual([])
  })
})
