import { Context } from '@dsh/kernel'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import SessionService, { foldMessages, type Session } from '../src/index.js'
import { assistant, toolResult, user } from './helpers.js'

type Step =
  | { kind: 'append'; role: 'user' | 'assistant' | 'tool' | 'empty'; text: string }
  | { kind: 'replace'; a: number; b: number; text: string }
  | { kind: 'boundary' }
  | { kind: 'derive' }
  | { kind: 'freeze' }

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('append' as const),
    role: fc.constantFrom('user' as const, 'assistant' as const, 'tool' as const, 'empty' as const),
    text: fc.string({ maxLength: 6 }),
  }),
  fc.record({ kind: fc.constant('replace' as const), a: fc.nat(), b: fc.nat(), text: fc.string({ maxLength: 6 }) }),
  fc.constant({ kind: 'boundary' as const }),
  fc.constant({ kind: 'derive' as const }),
  fc.constant({ kind: 'freeze' as const }),
)

function apply(session: Session, s: Step, snapshots: unknown[][]): void {
  const surface = session.surface().length
  switch (s.kind) {
    case 'append': {
      const op = { surfaceOp: { op: 'append' as const } }
      if (s.role === 'user') session.append('user/message', { message: user(s.text) }, op)
      else if (s.role === 'tool')
        session.append('tool/result', { message: toolResult(`c${session.length}`, s.text) }, op)
      else session.append('assistant/message', { message: assistant(s.role === 'empty' ? '' : s.text) }, op)
      break
    }
    case 'replace': {
      if (surface === 0) return
      const start = s.a % surface
      const end = start + (s.b % (surface - start))
      session.append(
        'user/message',
        { message: user(`summary ${s.text}`) },
        { surfaceOp: { op: 'replace', start, end } },
      )
      break
    }
    case 'boundary':
      session.append('step/start', {})
      break
    case 'derive':
      session.deriveMessages()
      break
    case 'freeze': {
      const frozen = Object.freeze(session.deriveMessages())
      snapshots.push([frozen, [...frozen]])
      break
    }
  }
}

describe('the model surface', () => {
  it('derives incrementally exactly what a naive fold of the whole log derives', async () => {
    const ctx = new Context()
    ctx.plugin(SessionService)
    await new Promise((resolve) => setTimeout(resolve, 0))
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        const session = ctx.sessions.create()
        const snapshots: unknown[][] = []
        for (const s of steps) {
          apply(session, s, snapshots)
          expect(session.deriveMessages()).toEqual(foldMessages(session.events))
        }
        // A frozen result is a snapshot: later appends never change it.
        for (const [frozen, copy] of snapshots) expect(frozen).toEqual(copy)
        const generations = session.events.filter((e) => e.surfaceOp?.op === 'replace').length
        expect(session.generation).toBe(generations)
        // The transcript reads append-origin nodes, never the current surface.
        expect(session.transcript().map((e) => e.seq)).toEqual(
          session.events.filter((e) => e.surfaceOp?.op === 'append').map((e) => e.seq),
        )
        ctx.sessions.close(session)
      }),
      { numRuns: 300 },
    )
  })

  it('hides a replaced range from the model and keeps it in the transcript', async () => {
    const ctx = new Context()
    ctx.plugin(SessionService)
    await new Promise((resolve) => setTimeout(resolve, 0))
    const session = ctx.sessions.create()
    const op = { surfaceOp: { op: 'append' as const } }
    session.append('user/message', { message: user('a') }, op)
    session.append('assistant/message', { message: assistant('b') }, op)
    session.append('user/message', { message: user('c') }, op)
    const before = session.deriveMessages()
    expect(before).toHaveLength(3)
    session.append(
      'user/message',
      { message: user('summary') },
      { surfaceOp: { op: 'replace', start: 0, end: 1 }, sourceEventSeqs: [0, 1] },
    )
    expect(session.deriveMessages()).toEqual([user('summary'), user('c')])
    expect(session.surface()).toEqual([3, 2])
    expect(session.transcript().map((e) => e.seq)).toEqual([0, 1, 2])
    expect(session.generation).toBe(1)
  })
})
