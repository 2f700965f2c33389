// The first "done when": a long scripted session (hundreds of steps, large tool outputs) runs
// to completion under a small context window with pruning and compaction; every dispatched request
// fits the window by the meter's own estimator; the log keeps every raw event and the transcript
// shows all of it.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool } from '@dsh/agent/tools'
import type { Plugin } from '@dsh/kernel'
import type { LlmAdapter, LlmDispatch, StreamChunk } from '@dsh/llm'
import { messageToChunks } from '@dsh/llm'
import { eventData, isEvent } from '@dsh/session'
import SessionPersistence from '@dsh/session/store/coordinator'
import JsonlSessionStore from '@dsh/session/store/jsonl'
import { describe, expect, it } from 'vitest'
import { estimateRequest } from '../src/index.js'
import { createContextHarness, textOf } from './harness.js'

const WINDOW = 8_000
const STEPS = 300
const OUTPUT_CHARS = 20_000

/** A model that calls `big` STEPS times, then answers; summary calls get a short summary. */
function longModel() {
  const agentRequests: number[] = []
  const summaryRequests: number[] = []
  let calls = 0
  const adapter: LlmAdapter = {
    name: 'long',
    catalog: (provider) => ({ provider, defaultModel: 'small', models: [{ id: 'small', contextWindow: WINDOW }] }),
    defaults: () => ({ model: 'small' }),
    async *stream(dispatch: LlmDispatch): AsyncGenerator<StreamChunk> {
      const tokens = estimateRequest(dispatch.request)
      const summary = dispatch.request.system?.startsWith('You compact the history') === true
      ;(summary ? summaryRequests : agentRequests).push(tokens)
      const usage = { inputTokens: tokens, outputTokens: 20, totalTokens: tokens + 20 }
      if (summary) {
        const entries = /\((\d+) entries\)/.exec(textOf(dispatch.request.messages[0] as never))?.[1]
        yield* messageToChunks({
          role: 'assistant',
          content: [
            {
              type: 'text',
              text: `The agent read the big file ${calls} times so far (${entries} entries summarised).`,
            },
          ],
          finishReason: 'stop',
          usage,
        })
        return
      }
      calls++
      yield* messageToChunks(
        calls <= STEPS
          ? {
              role: 'assistant',
              content: [{ type: 'tool-call', id: `c${calls}`, name: 'big', arguments: { n: calls } }],
              finishReason: 'tool-calls',
              usage,
            }
          : { role: 'assistant', content: [{ type: 'text', text: 'all done' }], finishReason: 'stop', usage },
      )
    },
  }
  return { adapter, agentRequests, summaryRequests }
}

describe('a long session under a small context window', () => {
  it('runs hundreds of steps with pruning and compaction, every request under the window', async () => {
    const model = longModel()
    const dir = mkdtempSync(join(tmpdir(), 'dsh-long-'))
    const root = await createContextHarness({
      before: async (r) => {
        await r.plugin(JsonlSessionStore as unknown as Plugin, { dir })
        await r.plugin(SessionPersistence, { delayMs: 5 })
      },
      adapter: model.adapter,
      provider: 'long',
      model: 'small',
      maxSteps: STEPS + 10,
      pruning: { maxChars: 6_000, keepChars: 3_000 },
      compaction: { threshold: 0.75, keepRatio: 0.3 },
    })
    root.tools.register(
      defineTool<{ n: number }>({
        name: 'big',
        description: 'returns a large output',
        parameters: { type: 'object', properties: { n: { type: 'number' } } },
        execute: ({ n }) => `output ${n} `.padEnd(OUTPUT_CHARS, `${n % 10}`),
      }),
    )
    const started = performance.now()
    const agent = await root.agents.create()
    agent.followup('read the big file again and again')
    await agent.whenIdle()
    const session = agent.session
    const turnEnd = session.events.filter((e) => e.type === 'turn/end').map((e) => e.data)
    expect(turnEnd).toEqual([{ reason: 'completed' }])

    // Every request the agent dispatched fit the window (same estimator as the meter).
    expect(model.agentRequests).toHaveLength(STEPS + 1)
    expect(Math.max(...model.agentRequests)).toBeLessThan(WINDOW)
    expect(Math.max(...model.summaryRequests)).toBeLessThan(WINDOW)

    // Compactions happened, each a start/end pair with a summary node citing its sources.
    const starts = session.events.filter((e) => e.type === 'compaction/start')
    const ends = eventData(session.events, 'compaction/end')
    expect(starts.length).toBeGreaterThan(10)
    expect(ends).toHaveLength(starts.length)
    for (const end of ends) {
      expect(end.ok).toBe(true)
      const summary = session.events[end.ok ? end.summarySeq : -1]
      expect(summary?.type).toBe('user/message')
      expect(summary?.surfaceOp?.op).toBe('replace')
      expect(summary?.sourceEventSeqs?.length).toBeGreaterThan(0)
    }
    expect(model.summaryRequests).toHaveLength(starts.length)

    // The durable log keeps every raw result; the transcript shows all of it, unpruned.
    const raw = session.events.filter((e) => isEvent(e, 'tool/result')).filter((e) => e.surfaceOp?.op === 'append')
    expect(raw).toHaveLength(STEPS)
    expect(raw.every((e) => textOf(e.data.message).length === OUTPUT_CHARS)).toBe(true)
    const pruned = session.events.filter((e) => e.type === 'tool/result' && e.surfaceOp?.op === 'replace')
    expect(pruned).toHaveLength(STEPS)
    expect(pruned.every((e) => raw.some((r) => e.sourceEventSeqs?.[0] === r.seq))).toBe(true)
    const transcript = session.transcript()
    expect(transcript.filter((e) => e.type === 'tool/result')).toHaveLength(STEPS)
    expect(transcript.filter((e) => e.type === 'assistant/message')).toHaveLength(STEPS + 1)
    expect(transcript.some((e) => e.type === 'user/message' && e.data.origin === 'compaction')).toBe(false)

    // The surface the model would see next is small and starts with a summary.
    const surface = session.deriveMessages()
    expect(textOf(surface[0] as never)).toContain('Summary of the earlier conversation')
    expect(root.tokenMeter.measure(session).pressure).toBeLessThan(1)
    root.invariants.assert()

    // The durable log (JSONL, re-read and validated) holds every raw event, pruned and compacted alike.
    expect(await root.sessions.flush(session)).toBe(true)
    const stored = await root.sessionPersistence.read(session.id)
    expect(stored.length).toBe(session.length)
    expect(JSON.stringify(stored.events)).toBe(JSON.stringify(session.events))
    expect(JSON.stringify(stored.deriveMessages())).toBe(JSON.stringify(session.deriveMessages()))
    expect(performance.now() - started).toBeLessThan(20_000)
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)
})
