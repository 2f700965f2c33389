// The per-request context work is incremental: the meter's running totals and folded reading, and the
// pruning row's settled prefix, must give exactly what a from-scratch pass over the whole log gives,
// across appends, usage anchors, pruning's own replacements and a range replacement that moves positions.
import type { RequestDraft } from '@dsh/agent'
import type { AssistantMessage, ToolResultMessage, ToolSchema } from '@dsh/llm'
import { createScriptedAdapter } from '@dsh/llm/scripted'
import type { Session } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import { estimateRequest } from '../src/index.js'
import { pruneToolResults } from '../src/pruning.js'
import { createContextHarness, messageOf, textOf } from './harness.js'

const APPEND = { surfaceOp: { op: 'append' } } as const
const TOOLS: readonly ToolSchema[] = Object.freeze([
  Object.freeze({ name: 'read', description: 'read a file', parameters: { type: 'object' } }),
])

function withCatalog(window: number) {
  return Object.assign(createScriptedAdapter([]), {
    catalog: (provider: string) => ({ provider, defaultModel: 'm', models: [{ id: 'm', contextWindow: window }] }),
  })
}

const harness = (window: number, pruning: false | { maxChars: number; keepChars: number } = false) =>
  createContextHarness({ adapter: withCatalog(window), pruning, compaction: false })

function user(session: Session, text: string) {
  session.append('user/message', { message: { role: 'user', content: [{ type: 'text', text }] } }, APPEND)
}

function call(session: Session, id: string, usage?: number) {
  const message: AssistantMessage = {
    role: 'assistant',
    content: [{ type: 'tool-call', id, name: 'read', arguments: { path: `${id}.txt` } }],
    finishReason: 'tool-calls',
    ...(usage === undefined ? {} : { usage: { inputTokens: usage, outputTokens: 7, totalTokens: usage + 7 } }),
  }
  session.append('request/header', { config: { provider: 'scripted', model: 'm' }, system: 'sys' })
  session.append('request/context', { contextWindow: 50_000 })
  session.append('assistant/message', { message }, APPEND)
}

function result(session: Session, id: string, text: string) {
  const message: ToolResultMessage = {
    role: 'tool',
    toolCallId: id,
    toolName: 'read',
    content: [{ type: 'text', text }],
    isError: false,
  }
  return session.append('tool/result', { message }, APPEND)
}

describe('incremental context work', () => {
  it('the meter reads a growing log exactly as a meter reading it once from scratch', async () => {
    const root = await harness(50_000)
    const session = root.sessions.create()
    const check = async () => {
      const whole = estimateRequest({ system: 'sys', tools: TOOLS, messages: session.deriveMessages() })
      expect(root.tokenMeter.estimateNext(session, { system: 'sys', tools: TOOLS })).toBe(whole)
      const fresh = (await harness(50_000)).tokenMeter
      expect(root.tokenMeter.measure(session)).toEqual(fresh.measure(session))
    }
    user(session, 'start')
    await check()
    for (let i = 0; i < 6; i++) {
      call(session, `c${i}`, i % 3 === 0 ? undefined : 1000 + i)
      result(session, `c${i}`, `${i}`.repeat(300 * (i + 1)))
      await check()
    }
    // A replacement makes the last usage stale (full estimate) until a new answer brings usage again.
    pruneToolResults(session, { maxChars: 1000, keepChars: 100 })
    expect(root.tokenMeter.measure(session).source).toBe('estimate')
    await check()
    call(session, 'c9', 4000)
    result(session, 'c9', 'small')
    expect(root.tokenMeter.measure(session).source).toBe('usage')
    await check()
  })

  it('pruning before each request catches every oversized answered result, also after positions moved', async () => {
    const root = await harness(1_000_000, { maxChars: 1000, keepChars: 100 })
    const session = root.sessions.create()
    const request = () =>
      root.waterfall(
        'agent/request',
        { session, config: { provider: 'scripted', model: 'm' }, system: 'sys', tools: [] } as unknown as RequestDraft,
        async () => ({}) as RequestDraft,
      )
    const rawResults = () => session.transcript().filter((event) => event.type === 'tool/result')
    const prunedSources = () =>
      session.events
        .filter((event) => event.type === 'tool/result' && event.surfaceOp?.op === 'replace')
        .flatMap((event) => event.sourceEventSeqs ?? [])
    user(session, 'start')
    for (let i = 0; i < 5; i++) {
      call(session, `s${i}`)
      result(session, `s${i}`, 'small')
      await request()
    }
    const big = result(session, 's4b', 'B'.repeat(5000))
    await request() // not answered yet: sent whole
    expect(prunedSources()).toEqual([])
    call(session, 'after')
    result(session, 'after', 'small')
    await request()
    expect(prunedSources()).toEqual([big.seq])
    // A range replacement (as compaction makes) shifts every position after it.
    const surface = session.surface()
    session.append(
      'user/message',
      { message: { role: 'user', content: [{ type: 'text', text: 'summary' }] }, origin: 'compaction' },
      { surfaceOp: { op: 'replace', start: 0, end: 6 }, sourceEventSeqs: [...surface.slice(0, 7)] },
    )
    call(session, 'late')
    const late = result(session, 'late', `HEAD${'L'.repeat(5000)}TAIL`)
    call(session, 'next')
    await request()
    expect(prunedSources()).toEqual([big.seq, late.seq])
    const replacement = session.events.at(-1)
    const op = replacement?.surfaceOp
    expect(op?.op === 'replace' && session.surface()[op.start]).toBe(replacement?.seq)
    expect(textOf(messageOf(replacement))).toMatch(/^HEAD[\s\S]*TAIL$/)
    expect(rawResults()).toHaveLength(8)
    // Nothing is left to prune: a from-scratch pass agrees.
    expect(pruneToolResults(session, { maxChars: 1000, keepChars: 100 }, { includeFresh: false })).toEqual([])
  })
})
