// Events narrow: testing `type` (or `isEvent`) gives the declared payload, with no cast. The
// `@ts-expect-error` lines make `tsc -p tsconfig.tests.json` fail if narrowing stops working.
import { Context } from '@dsh/kernel'
import type { ToolCallBlock, ToolResultMessage } from '@dsh/llm'
import { describe, expect, expectTypeOf, it } from 'vitest'
import SessionService, {
  type AnySessionEvent,
  isEvent,
  isSurfaceEvent,
  type SessionEvent,
  type UnknownSessionEvent,
} from '../src/index.js'

async function live() {
  const ctx = new Context()
  ctx.plugin(SessionService)
  await new Promise((resolve) => setTimeout(resolve, 0))
  return ctx.sessions.create()
}

const call: ToolCallBlock = { type: 'tool-call', id: 'c1', name: 'read', arguments: { path: 'a.txt' } }
const result: ToolResultMessage = {
  role: 'tool',
  toolCallId: 'c1',
  toolName: 'read',
  content: [{ type: 'text', text: 'hello' }],
  isError: false,
}

describe('events that narrow', () => {
  it('isEvent narrows data to the declared payload of that type', async () => {
    const session = await live()
    session.append('turn/start', {})
    session.append('tool/call', { call })
    session.append('tool/result', { message: result }, { surfaceOp: { op: 'append' } })
    const names: string[] = []
    for (const e of session.events) {
      if (isEvent(e, 'tool/call')) {
        expectTypeOf(e.data).toEqualTypeOf<{ call: ToolCallBlock }>()
        names.push(e.data.call.name)
        // @ts-expect-error: a tool/call payload has no `message`
        expect(e.data.message).toBeUndefined()
      }
    }
    expect(names).toEqual(['read'])
    const results = session.events.filter((e) => isEvent(e, 'tool/result')).map((e) => e.data.message.toolCallId)
    expect(results).toEqual(['c1'])
  })

  it('testing `type` narrows the union the log holds, in a switch too', async () => {
    const session = await live()
    session.append('turn/start', {})
    session.append('turn/end', { reason: 'completed' })
    const seen: string[] = []
    for (const e of session.events) {
      expectTypeOf(e).toEqualTypeOf<AnySessionEvent>()
      switch (e.type) {
        case 'turn/end':
          expectTypeOf(e.data.reason).toEqualTypeOf<
            'completed' | 'aborted' | 'blocked' | 'error' | 'max-tokens' | 'interrupted'
          >()
          seen.push(e.data.reason)
          break
        case 'turn/start':
          // @ts-expect-error: turn/start carries no reason
          seen.push(String(e.data.reason))
          break
      }
    }
    expect(seen).toEqual(['undefined', 'completed'])
  })

  it('isEvent takes several types, and works on wire copies whose data is unknown', () => {
    const wire: { type: string; seq: number; data: unknown } = JSON.parse(
      JSON.stringify({ type: 'assistant/chunk', seq: 3, time: 0, data: { chunk: { type: 'text-delta', text: 'hi' } } }),
    )
    expect(isEvent(wire, 'tool/call')).toBe(false)
    if (isEvent(wire, 'assistant/chunk', 'assistant/message')) {
      expectTypeOf(wire).toMatchTypeOf<SessionEvent<'assistant/chunk' | 'assistant/message'>>()
      expect(wire.type === 'assistant/chunk' && wire.data.chunk.type).toBe('text-delta')
    } else expect.unreachable('the wire copy is an assistant/chunk')
    expect(isEvent(undefined, 'tool/call')).toBe(false)
  })

  it('surface events give their message; undeclared types stay apart as UnknownSessionEvent', async () => {
    const session = await live()
    session.append('tool/result', { message: result }, { surfaceOp: { op: 'append' } })
    const unknown = session.appendUntyped('plugin/thing', { a: 1 }, { ignorable: true })
    expectTypeOf(unknown).toEqualTypeOf<UnknownSessionEvent>()
    // @ts-expect-error: an undeclared type cannot go through the typed append
    expect(() => session.append('plugin/thing', { a: 1 }, { ignorable: true })).not.toThrow()
    const messages = session.events.filter(isSurfaceEvent).map((e) => e.data.message.role)
    expect(messages).toEqual(['tool'])
    // @ts-expect-error: the typed append checks the payload against the declared map
    expect(() => session.append('tool/call', { call: { id: 'x' } })).toThrow()
  })
})
