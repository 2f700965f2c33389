import { Context } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import SessionService, { repairEvents } from '../src/index.js'
import { assistant, user } from './helpers.js'

async function setup() {
  const ctx = new Context()
  ctx.plugin(SessionService)
  await new Promise((resolve) => setTimeout(resolve, 0))
  return ctx
}

const header = (extra: object = {}) => ({ type: 'session', version: 0, id: 's', createdAt: 1, cwd: '/', ...extra })
const ev = (seq: number, type: string, data: object, extra: object = {}) => ({ type, seq, time: 1, data, ...extra })

describe('the format and unknown-event policy', () => {
  it('reads a valid log back into the same surface', async () => {
    const ctx = await setup()
    const s = ctx.sessions.build(header(), [
      ev(0, 'user/message', { message: user('a') }, { surfaceOp: { op: 'append' } }),
      ev(1, 'assistant/message', { message: assistant('b') }, { surfaceOp: { op: 'append' } }),
    ])
    expect(s.deriveMessages()).toEqual([user('a'), assistant('b')])
    expect(Object.isFrozen(s.events[0]?.data)).toBe(true)
  })

  it('refuses a newer format version and a non-ignorable unknown event with SESSION_FORMAT_UNSUPPORTED naming the file', async () => {
    const ctx = await setup()
    expect(() => ctx.sessions.build(header({ version: 1 }), [], '/tmp/s.jsonl')).toThrow(
      expect.objectContaining({ code: 'SESSION_FORMAT_UNSUPPORTED', message: expect.stringContaining('/tmp/s.jsonl') }),
    )
    expect(() => ctx.sessions.build(header(), [ev(0, 'future/thing', {})], '/tmp/s.jsonl')).toThrow(
      expect.objectContaining({
        code: 'SESSION_FORMAT_UNSUPPORTED',
        facts: expect.objectContaining({ file: '/tmp/s.jsonl', type: 'future/thing' }),
      }),
    )
  })

  it('skips ignorable unknown events and accepts types a plugin defined', async () => {
    const ctx = await setup()
    const s = ctx.sessions.build(header(), [
      ev(0, 'future/thing', { x: 1 }, { ignorable: true }),
      ev(1, 'turn/start', {}),
    ])
    expect(s.length).toBe(2)
    const dispose = ctx.sessions.defineEvent('todo/set')
    expect(ctx.sessions.build(header(), [ev(0, 'todo/set', { items: [] })]).length).toBe(1)
    dispose()
    expect(() => ctx.sessions.build(header(), [ev(0, 'todo/set', { items: [] })])).toThrow(/todo\/set/)
  })

  it('reports corruption with SESSION_CORRUPT: gaps, bad envelopes, bad surface transitions, bad headers', async () => {
    const ctx = await setup()
    const cases: [unknown, unknown[]][] = [
      [header(), [ev(1, 'turn/start', {})]],
      [header(), [{ seq: 0, time: 1, data: {} }]],
      [header(), [ev(0, 'turn/start', {}, { extra: 1 })]],
      [header(), [ev(0, 'user/message', { message: user('a') })]],
      [header(), [ev(0, 'user/message', { message: user('a') }, { surfaceOp: { op: 'replace', start: 0, end: 0 } })]],
      [header(), [ev(0, 'user/message', { message: assistant('a') }, { surfaceOp: { op: 'append' } })]],
      [header(), [ev(0, 'turn/start', {}, { sourceEventSeqs: [0] })]],
      [{ type: 'nope' }, []],
      [header({ version: 'x' }), []],
      [header({ extra: true }), []],
    ]
    for (const [h, records] of cases) {
      expect(() => ctx.sessions.build(h, records, 'f')).toThrow(expect.objectContaining({ code: 'SESSION_CORRUPT' }))
    }
  })
})

describe('cold-resume repair', () => {
  it('closes an open tail: not-started and outcome-unknown results, then step/end and turn/end interrupted', async () => {
    const ctx = await setup()
    const s = ctx.sessions.create()
    s.append('turn/start', {})
    s.append('step/start', {})
    s.append(
      'assistant/message',
      {
        message: assistant('', [
          { id: 'a', name: 'read' },
          { id: 'b', name: 'write' },
        ]),
      },
      { surfaceOp: { op: 'append' } },
    )
    s.append('tool/call', { call: { type: 'tool-call', id: 'a', name: 'read', arguments: {} } })
    const repair = repairEvents(s.openTail())
    expect(repair.map((r) => [r.type, r.type === 'tool/result' ? r.data.code : undefined])).toEqual([
      ['tool/result', 'TOOL_OUTCOME_UNKNOWN'],
      ['tool/result', 'TOOL_NOT_STARTED'],
      ['step/end', undefined],
      ['turn/end', undefined],
    ])
    expect(repair[0]?.options.sourceEventSeqs).toEqual([3])
    expect(repair[1]?.options.sourceEventSeqs).toEqual([2])
    for (const r of repair) s.append(r.type, r.data, r.options)
    expect(s.isClosed()).toBe(true)
    expect(s.events.at(-1)?.data).toMatchObject({ reason: 'interrupted' })
    expect(repairEvents(s.openTail())).toEqual([])
  })
})
