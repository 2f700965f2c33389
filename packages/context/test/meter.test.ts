// The token meter and pruning on hand-built logs: usage anchors the reading, what came after is
// estimated, a replacement falls back to a full estimate, thresholds fire `context/pressure`;
// pruning replaces the surface node only.

import { defineTool } from '@dsh/agent/tools'
import type { AssistantMessage, ToolResultMessage } from '@dsh/llm'
import { createScriptedAdapter } from '@dsh/llm/scripted'
import type { Session } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import { estimateMessage, estimateRequest, safeCuts, surfaceNodes, type TokenReading } from '../src/index.js'
import { pruneToolResults } from '../src/pruning.js'
import { createContextHarness, messageOf, textOf } from './harness.js'

const APPEND = { surfaceOp: { op: 'append' } } as const

function withCatalog(window: number) {
  const adapter = createScriptedAdapter([])
  return Object.assign(adapter, {
    catalog: (provider: string) => ({ provider, defaultModel: 'm', models: [{ id: 'm', contextWindow: window }] }),
  })
}

function user(session: Session, text: string) {
  return session.append('user/message', { message: { role: 'user', content: [{ type: 'text', text }] } }, APPEND)
}

function answer(session: Session, message: AssistantMessage) {
  session.append('request/header', { config: { provider: 'scripted', model: 'm' }, system: 'sys' })
  session.append('request/context', { contextWindow: 1000 })
  return session.append('assistant/message', { message }, APPEND)
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

describe('the token meter', () => {
  it('anchors on provider usage and estimates only what came after', async () => {
    const root = await createContextHarness({ adapter: withCatalog(1000), pruning: false, compaction: false })
    const session = root.sessions.create()
    user(session, 'hello')
    expect(root.tokenMeter.measure(session)).toMatchObject({ source: 'estimate', window: 1000 })
    const reply = answer(session, {
      role: 'assistant',
      content: [{ type: 'tool-call', id: 'c1', name: 'read', arguments: {} }],
      finishReason: 'tool-calls',
      usage: { inputTokens: 300, outputTokens: 20, totalTokens: 320 },
    })
    const after = result(session, 'c1', 'x'.repeat(400))
    const reading = root.tokenMeter.measure(session)
    const extra = estimateMessage(after.data.message)
    expect(reading).toEqual({
      sessionId: session.id,
      tokens: 320 + extra,
      source: 'usage',
      estimatedTokens: extra,
      usageSeq: reply.seq,
      window: 1000,
      pressure: (320 + extra) / 1000,
      level: 0,
      provider: 'scripted',
      model: 'm',
    })
  })

  it('falls back to a full estimate after a replacement, and caps the window by config', async () => {
    const root = await createContextHarness({
      adapter: withCatalog(1000),
      meter: { contextWindow: 500 },
      pruning: false,
      compaction: false,
    })
    const session = root.sessions.create()
    user(session, 'hello')
    answer(session, {
      role: 'assistant',
      content: [{ type: 'tool-call', id: 'c1', name: 'read', arguments: {} }],
      finishReason: 'tool-calls',
      usage: { inputTokens: 300, outputTokens: 20, totalTokens: 320 },
    })
    result(session, 'c1', 'y'.repeat(20_000))
    pruneToolResults(session, { maxChars: 1000, keepChars: 200 })
    const reading = root.tokenMeter.measure(session)
    expect(reading.source).toBe('estimate')
    expect(reading.window).toBe(500)
    expect(reading.tokens).toBe(estimateRequest({ system: 'sys', messages: session.deriveMessages() }))
  })

  it('emits context/pressure when a threshold is crossed', async () => {
    const root = await createContextHarness({
      adapter: withCatalog(1000),
      meter: { thresholds: [0.5, 0.9] },
      pruning: false,
      compaction: false,
    })
    const seen: Array<[number, number]> = []
    root.on(
      'context/pressure',
      (_session, reading: TokenReading, previous) => void seen.push([previous, reading.level]),
    )
    const session = root.sessions.create()
    user(session, 'hello')
    answer(session, { role: 'assistant', content: [{ type: 'text', text: 'hi' }], finishReason: 'stop' })
    user(session, 'x'.repeat(2400))
    user(session, 'x'.repeat(2000))
    expect(seen).toEqual([
      [0, 1],
      [1, 2],
    ])
  })

  it('answers /context on ctx.commands with the reading', async () => {
    const root = await createContextHarness({ adapter: withCatalog(1000), pruning: false, compaction: false })
    type Spec = { run(args: string, target: { session?: Session }): Promise<{ text: string; data: TokenReading }> }
    const registry = new Map<string, Spec>()
    await root.plugin({
      name: 'fake-commands',
      apply: (ctx) => {
        ctx.provide('commands')
        ;(ctx as unknown as { commands: unknown }).commands = {
          register: (spec: Spec & { name: string }) => {
            registry.set(spec.name, spec)
            return () => registry.delete(spec.name)
          },
        }
      },
    })
    const session = root.sessions.create()
    user(session, 'hello')
    answer(session, {
      role: 'assistant',
      content: [{ type: 'text', text: 'hi' }],
      finishReason: 'stop',
      usage: { inputTokens: 600, outputTokens: 10, totalTokens: 610 },
    })
    const outcome = await registry.get('context')?.run('', { session })
    expect(outcome?.text.split('\n')[0]).toBe(
      'next request: about 610 tokens of 1,000 (61%); as the provider counted the last request',
    )
    expect(outcome?.text.split('\n').slice(1)).toEqual([
      expect.stringMatching(/^ +\d+ {2}system prompt$/),
      expect.stringMatching(/^ +\d+ {2}tool schemas \(\d+ tools?\)$/),
      expect.stringMatching(/^ +\d+ {2}conversation \(2 messages\)$/),
    ])
    expect(outcome?.data.usageSeq).toBe(session.length - 1)
    await expect(registry.get('context')?.run('', {})).rejects.toMatchObject({ code: 'COMMAND_NEEDS_SESSION' })
  })
})

describe('tool-result pruning', () => {
  it('replaces an oversized result on the surface only, citing the raw event', async () => {
    const root = await createContextHarness({ adapter: withCatalog(1000), pruning: false, compaction: false })
    const session = root.sessions.create()
    user(session, 'read it')
    answer(session, {
      role: 'assistant',
      content: [
        { type: 'tool-call', id: 'c1', name: 'read', arguments: {} },
        { type: 'tool-call', id: 'c2', name: 'read', arguments: {} },
      ],
      finishReason: 'tool-calls',
    })
    const big = result(session, 'c1', `HEAD${'m'.repeat(10_000)}TAIL`)
    result(session, 'c2', 'small')
    const pruned = pruneToolResults(session, { maxChars: 1000, keepChars: 100 })
    expect(pruned).toEqual([{ sourceSeq: big.seq, seq: session.length - 1, originalChars: 10_008 }])
    const replacement = session.events.at(-1)
    expect(replacement?.surfaceOp).toEqual({ op: 'replace', start: 2, end: 2 })
    expect(replacement?.sourceEventSeqs).toEqual([big.seq])
    const text = textOf(messageOf(replacement))
    expect(text.startsWith('HEAD')).toBe(true)
    expect(text.endsWith('TAIL')).toBe(true)
    expect(text).toContain(`(event ${big.seq})`)
    expect(text.length).toBeLessThan(400)
    // The transcript still has the original; pruning twice changes nothing.
    expect(textOf(messageOf(session.transcript()[2]))).toHaveLength(10_008)
    expect(pruneToolResults(session, { maxChars: 1000, keepChars: 100 })).toEqual([])
    expect(safeCuts(surfaceNodes(session))).toEqual([1])
  })

  it('sends a result the model has not seen whole while there is room, and prunes it once it was answered', async () => {
    const PRUNED = 4_400 // keepChars plus the marker
    for (const [window, fresh] of [
      [100_000, 'whole'],
      [6_000, 'pruned'],
    ] as const) {
      const adapter = Object.assign(
        createScriptedAdapter([
          {
            role: 'assistant',
            content: [{ type: 'tool-call', id: 'c1', name: 'dump', arguments: {} }],
            finishReason: 'tool-calls',
          },
          {
            role: 'assistant',
            content: [{ type: 'tool-call', id: 'c2', name: 'dump', arguments: {} }],
            finishReason: 'tool-calls',
          },
          { role: 'assistant', content: [{ type: 'text', text: 'done' }], finishReason: 'stop' },
        ]),
        {
          catalog: (provider: string) => ({
            provider,
            defaultModel: 'scripted',
            models: [{ id: 'scripted', contextWindow: window }],
          }),
        },
      )
      const root = await createContextHarness({
        adapter,
        pruning: { maxChars: 12_000, keepChars: 4_000 },
        compaction: false,
      })
      root.tools.register(
        defineTool({
          name: 'dump',
          description: 'dumps',
          parameters: { type: 'object' },
          execute: () => 'z'.repeat(20_000),
        }),
      )
      const agent = await root.agents.create()
      agent.followup('dump twice')
      await agent.whenIdle()
      const sizes = adapter.dispatches.map((d) =>
        d.request.messages.filter((m) => m.role === 'tool').map((m) => textOf(m as ToolResultMessage).length),
      )
      // Request 2 carries result 1 unseen; request 3 carries result 1 answered and result 2 unseen.
      const [second, third] = [sizes[1] as number[], sizes[2] as number[]]
      if (fresh === 'whole') {
        expect(second).toEqual([20_000])
        expect(third[0]).toBeLessThan(PRUNED)
        expect(third[1]).toBe(20_000)
      } else {
        // A small window: even unseen results are cut before they are sent.
        expect(second[0]).toBeLessThan(PRUNED)
        expect(third.every((size) => size < PRUNED)).toBe(true)
      }
      expect(agent.session.transcript().filter((e) => e.type === 'tool/result')).toHaveLength(2)
    }
  })
})
