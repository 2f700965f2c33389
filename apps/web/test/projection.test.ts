// The client's session projection: each event folds exactly once across baselines and reconnects,
// streamed text gives way to the committed message, and synthetic closers stay visible as such.

import type { EventEnvelope, SessionFrame } from '@dsh/surfaces/wire'
import { describe, expect, it } from 'vitest'
import { type ConversationNode, costText, SessionProjection, type ToolNode } from '../src/projection'

let time = 0
const ev = (seq: number, type: string, data: unknown): EventEnvelope => ({ type, seq, time: ++time, data })
const user = (seq: number, text: string, origin?: string) =>
  ev(seq, 'user/message', {
    message: { role: 'user', content: [{ type: 'text', text }] },
    ...(origin ? { origin } : {}),
  })
const baseline = (since: number, events: EventEnvelope[]): SessionFrame => ({
  type: 'session/baseline',
  header: { id: 's1', cwd: '/w', createdAt: 0 },
  since,
  events,
  status: 'idle',
  inbox: { 'next-step': [], 'next-turn': [] },
  jobs: [],
})
const kinds = (nodes: ConversationNode[]) => nodes.map((node) => node.kind)

describe('SessionProjection', () => {
  it('folds each seq once across a reconnect baseline that overlaps what it has', () => {
    const p = new SessionProjection('s1')
    p.applyFrame(baseline(0, [ev(0, 'turn/start', {}), user(1, 'hi')]))
    expect(p.applyFrame({ type: 'session/event', event: user(1, 'hi') })).toBe(false)
    p.applyFrame(baseline(1, [user(1, 'hi'), ev(2, 'turn/end', { reason: 'completed' })]))
    expect(kinds(p.nodes)).toEqual(['user', 'turn-end'])
    expect(p.nextSeq).toBe(3)
  })

  it('shows a retry and a give-up as notices a person can read', () => {
    const p = new SessionProjection('s1')
    p.applyFrame(
      baseline(0, [
        ev(0, 'recovery/retry', {
          attempt: 1,
          maxAttempts: 4,
          code: 'RATE_LIMIT',
          status: 429,
          delayMs: 2000,
          message: 'x',
        }),
        ev(1, 'recovery/give-up', { code: 'NETWORK', attempts: 4, reason: 'connect ECONNREFUSED' }),
      ]),
    )
    expect(p.nodes.map((node) => [node.kind, node.text])).toEqual([
      ['notice', 'Retrying: rate limited (HTTP 429), retrying in 2 s (1/4)'],
      ['notice', 'gave up after 4 retries: connect ECONNREFUSED'],
    ])
  })

  it('shows a model error once: the turn end after it says what to do next', () => {
    const p = new SessionProjection('s1')
    const failed = { role: 'assistant', content: [], error: { code: 'AUTH', message: 'bad key' } }
    p.applyFrame(
      baseline(0, [
        user(0, 'hi'),
        ev(1, 'assistant/message', { message: failed }),
        ev(2, 'turn/end', { reason: 'error', message: 'bad key' }),
      ]),
    )
    expect(p.nodes.map((node) => [node.kind, node.text])).toEqual([
      ['user', 'hi'],
      ['error', 'bad key'],
      ['turn-end', ''],
    ])
    expect(p.nodes.at(-1)?.next).toBe('check the key on the Settings page, then send again')
  })

  it('starts over when the host cannot fill a gap', () => {
    const p = new SessionProjection('s1')
    p.applyFrame(baseline(0, [user(0, 'one')]))
    p.applyFrame(baseline(5, [user(5, 'later')]))
    expect(p.nodes.map((node) => node.text)).toEqual(['later'])
  })

  it('replaces streamed deltas with the committed message and keeps harness context apart', () => {
    const p = new SessionProjection('s1')
    p.applyFrame(
      baseline(0, [
        user(0, 'Sandbox: read-only.', 'sandbox'),
        user(1, 'hello'),
        ev(2, 'assistant/chunk', { chunk: { type: 'reasoning-delta', text: 'hm' } }),
        ev(3, 'assistant/chunk', { chunk: { type: 'text-delta', text: 'Hel' } }),
      ]),
    )
    expect(kinds(p.nodes)).toEqual(['context', 'user', 'streaming'])
    expect(p.streaming).toMatchObject({ text: 'Hel', reasoning: 'hm' })
    p.applyFrame({
      type: 'session/event',
      event: ev(4, 'assistant/message', {
        message: {
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'hm' },
            { type: 'text', text: 'Hello' },
          ],
          finishReason: 'stop',
          usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 },
        },
      }),
    })
    expect(kinds(p.nodes)).toEqual(['context', 'user', 'assistant'])
    expect(p.nodes[2]).toMatchObject({ text: 'Hello', reasoning: 'hm' })
    expect(p.usage?.totalTokens).toBe(12)
    // No cost logged with it (a model without a price): unknown, never $0.
    expect(p.cost).toEqual({ usd: 0, requests: 1, unknownRequests: 1 })
    expect(costText(p.cost)).toBe('unknown')
    const priced = {
      role: 'assistant',
      content: [],
      finishReason: 'stop',
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
    }
    p.applyFrame({
      type: 'session/event',
      event: ev(5, 'assistant/message', { message: priced, cost: { usd: 0.0125 } }),
    })
    p.applyFrame({
      type: 'session/event',
      event: ev(5, 'assistant/message', { message: priced, cost: { usd: 0.0125 } }),
    })
    expect(p.cost).toEqual({ usd: 0.0125, requests: 2, unknownRequests: 1 })
    expect(costText(p.cost)).toBe('$0.01 + unknown')
  })

  it('shows a synthetic closer as the result of its call, with its code', () => {
    const p = new SessionProjection('s1')
    p.applyFrame(
      baseline(0, [
        ev(0, 'tool/call', { call: { type: 'tool-call', id: 'c1', name: 'bash', arguments: { command: 'make' } } }),
        ev(1, 'tool/result', {
          message: {
            role: 'tool',
            toolCallId: 'c1',
            toolName: 'bash',
            content: [{ type: 'text', text: 'outcome unknown' }],
            isError: true,
          },
          code: 'TOOL_OUTCOME_UNKNOWN',
          synthetic: true,
        }),
        ev(2, 'turn/end', { reason: 'interrupted' }),
      ]),
    )
    const tool = p.toolNodes.get('c1') as ToolNode
    expect(tool.result).toEqual({
      text: 'outcome unknown',
      isError: true,
      code: 'TOOL_OUTCOME_UNKNOWN',
      synthetic: true,
    })
    expect(kinds(p.nodes)).toEqual(['tool', 'turn-end'])
    expect(p.nodes[1]).toMatchObject({ reason: 'interrupted' })
  })
})
