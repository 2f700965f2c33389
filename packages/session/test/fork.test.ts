import { Context } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import SessionService from '../src/index.js'
import { assistant, toolResult, user } from './helpers.js'

async function setup() {
  const ctx = new Context()
  ctx.plugin(SessionService)
  await new Promise((resolve) => setTimeout(resolve, 0))
  return ctx
}

const op = { surfaceOp: { op: 'append' as const } }

describe('fork', () => {
  it('copies a closed prefix, records the lineage in the header and appends session/end-seed', async () => {
    const ctx = await setup()
    const parent = ctx.sessions.create({ id: 'p' })
    parent.append('turn/start', {})
    parent.append('user/message', { message: user('one') }, op)
    parent.append('assistant/message', { message: assistant('two') }, op)
    parent.append('turn/end', { reason: 'completed' })
    parent.append('turn/start', {})
    parent.append('user/message', { message: user('three') }, op)

    const child = ctx.sessions.fork('p', 3, 'c')
    expect(child.header).toMatchObject({ id: 'c', parentSession: 'p', seedLength: 4 })
    expect(child.events.slice(0, 4)).toEqual(parent.events.slice(0, 4))
    expect(child.events[4]).toMatchObject({
      type: 'session/end-seed',
      seq: 4,
      data: { parentSession: 'p', seedLength: 4 },
    })
    expect(child.deriveMessages()).toEqual([user('one'), assistant('two')])
    expect(ctx.sessions.get('c')).toBe(child)
  })

  it('refuses a boundary inside an open turn or with a call that has no result', async () => {
    const ctx = await setup()
    const parent = ctx.sessions.create({ id: 'p' })
    parent.append('turn/start', {})
    parent.append('assistant/message', { message: assistant('', [{ id: 'k', name: 'echo' }]) }, op)
    expect(() => ctx.sessions.fork(parent, 1)).toThrow(expect.objectContaining({ code: 'SESSION_FORK_OPEN_PREFIX' }))
    expect(() => ctx.sessions.fork(parent)).toThrow(expect.objectContaining({ code: 'SESSION_FORK_OPEN_PREFIX' }))
    parent.append('tool/result', { message: toolResult('k', 'ok') }, op)
    parent.append('turn/end', { reason: 'completed' })
    expect(ctx.sessions.fork(parent).header.seedLength).toBe(4)
    expect(ctx.sessions.fork(parent, -1).events.map((e) => e.type)).toEqual(['session/end-seed'])
    expect(() => ctx.sessions.fork(parent, 9)).toThrow(expect.objectContaining({ code: 'SESSION_FORK_BOUNDARY' }))
    expect(() => ctx.sessions.fork('nope')).toThrow(expect.objectContaining({ code: 'SESSION_NOT_FOUND' }))
  })
})
