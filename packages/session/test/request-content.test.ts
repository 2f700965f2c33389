// request/header stores the system prompt and tools by content hash: bodies once per log, resolved
// by requestOf; a header naming a body the log does not hold, or a body under the wrong hash, is
// refused; a fork carries its prefix's bodies, so the child resolves them too.
import { Context } from '@dsh/kernel'
import type { LlmCallConfig, ToolSchema } from '@dsh/llm'
import { describe, expect, it } from 'vitest'
import SessionService, { contentHash, type Session } from '../src/index.js'

async function setup() {
  const ctx = new Context()
  ctx.plugin(SessionService)
  await new Promise((resolve) => setTimeout(resolve, 0))
  return ctx
}

const config: LlmCallConfig = { provider: 'p', model: 'm' }
const tools: readonly ToolSchema[] = Object.freeze([
  Object.freeze({ name: 'read', description: 'reads', parameters: { type: 'object' as const } }),
])

function record(session: Session, system: string, list: readonly ToolSchema[] = tools) {
  return session.append('request/header', session.requestHeader({ config, system, tools: list }))
}

describe('request/header by content', () => {
  it('logs each body once and resolves every header whole', async () => {
    const ctx = await setup()
    const session = ctx.sessions.create()
    const first = record(session, 'sys A')
    const second = record(session, 'sys A')
    const changed = record(
      session,
      'sys B',
      Object.freeze([...tools, { name: 'grep', description: 'greps', parameters: { type: 'object' as const } }]),
    )
    const back = record(session, 'sys A')
    expect(first.data).toEqual({
      config,
      system: 'sys A',
      systemHash: contentHash('sys A'),
      tools,
      toolsHash: contentHash(JSON.stringify(tools)),
    })
    expect(second.data).toEqual({
      config,
      systemHash: contentHash('sys A'),
      toolsHash: contentHash(JSON.stringify(tools)),
    })
    expect(changed.data.system).toBe('sys B')
    expect(changed.data.tools).toHaveLength(2)
    expect(back.data.system).toBeUndefined()
    expect(session.requestOf(second.seq)).toEqual({ config, system: 'sys A', tools })
    expect(session.requestOf(back.seq)).toEqual({ config, system: 'sys A', tools })
    expect(session.requestOf(changed.seq).tools?.map((t) => t.name)).toEqual(['read', 'grep'])
    expect(() => session.requestOf(0 + 99)).toThrow(expect.objectContaining({ code: 'SESSION_EVENT_INVALID' }))
    // A reader of the same lines (cold resume) resolves them the same way.
    const copy = ctx.sessions.build(
      session.header,
      session.events.map((e) => JSON.parse(JSON.stringify(e))),
    )
    expect(copy.requestOf(back.seq)).toEqual(session.requestOf(back.seq))
  })

  it('refuses a hash no earlier header carries and a body stored under the wrong hash', async () => {
    const ctx = await setup()
    const session = ctx.sessions.create()
    expect(() => session.append('request/header', { config, systemHash: contentHash('never logged') })).toThrow(
      expect.objectContaining({
        code: 'SESSION_EVENT_INVALID',
        message: expect.stringMatching(/no earlier request\/header/),
      }),
    )
    const header = { type: 'session', version: 0, id: 's', createdAt: 1, cwd: '/' }
    const line = (data: object) => ({ type: 'request/header', seq: 0, time: 1, data })
    expect(() => ctx.sessions.build(header, [line({ config, toolsHash: 'abc' })], '/tmp/s.jsonl')).toThrow(
      expect.objectContaining({ code: 'SESSION_CORRUPT' }),
    )
    expect(() =>
      ctx.sessions.build(header, [line({ config, system: 'edited', systemHash: contentHash('original') })]),
    ).toThrow(expect.objectContaining({ code: 'SESSION_CORRUPT', message: expect.stringMatching(/does not match/) }))
  })

  it('a fork resolves the headers of its copied prefix and logs only new bodies', async () => {
    const ctx = await setup()
    const parent = ctx.sessions.create()
    record(parent, 'sys A')
    const child = ctx.sessions.fork(parent)
    const again = record(child, 'sys A')
    expect(again.data.system).toBeUndefined()
    expect(child.requestOf(again.seq).system).toBe('sys A')
  })
})
