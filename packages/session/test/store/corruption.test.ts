// Damaged session files: random truncations and byte flips either repair (a torn final line) or fail
// with a clear error code. Never a crash, a hang, or a silently dropped middle event.
import { readFileSync, writeFileSync } from 'node:fs'
import { HarnessError } from '@dsh/kernel'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseJsonl } from '../../src/store/jsonl.js'
import { append, assistant, boot, tempDir, toolResult, user } from './helpers.js'

const CLEAR = new Set(['SESSION_CORRUPT', 'SESSION_FORMAT_UNSUPPORTED'])

describe('corrupted JSONL session files', async () => {
  it('repairs truncations to the last whole line and refuses any other damage with a clear code', async () => {
    using dir = tempDir()
    const ctx = await boot('jsonl', dir.path)
    const session = ctx.sessions.create({ id: 'good' })
    for (let i = 0; i < 6; i++) {
      session.append('turn/start', {})
      session.append('user/message', { message: user(`ünïcode ${i} ${'y'.repeat(i * 7)}`) }, append)
      session.append('assistant/message', { message: assistant('', [{ id: `k${i}`, name: 'bash' }]) }, append)
      session.append('tool/call', { call: { type: 'tool-call', id: `k${i}`, name: 'bash', arguments: { n: i } } })
      session.append('tool/result', { message: toolResult(`k${i}`, `out ${i}`) }, append)
      session.append('turn/end', { reason: 'completed' })
    }
    await ctx.sessions.flush(session)
    const path = ctx.sessionStore.locate('good')
    const original = readFileSync(path)
    const lineEnds: number[] = []
    for (let i = 0; i < original.length; i++) if (original[i] === 0x0a) lineEnds.push(i + 1)
    await ctx.sessionPersistence.close(session)
    const outcomes = { repaired: 0, refused: 0, intact: 0 }

    const check = async (damaged: Buffer, kind: 'truncate' | 'flip', at: number) => {
      writeFileSync(path, damaged)
      let resumed: Awaited<ReturnType<typeof ctx.sessionPersistence.resume>>
      try {
        resumed = await ctx.sessionPersistence.resume('good')
      } catch (error) {
        if (!HarnessError.is(error) || !CLEAR.has(error.code)) throw error
        expect(error.message).toContain(path)
        outcomes.refused++
        return
      }
      const wholeLines = lineEnds.filter((end) => end <= at).length
      const events = wholeLines - 1
      if (kind === 'truncate') {
        // Every whole line before the cut survives, nothing after it; repair may append closers.
        expect(resumed.events.slice(0, events)).toEqual(session.events.slice(0, events))
        if (events < session.length) outcomes.repaired++
        else outcomes.intact++
      } else {
        // A flip that still parses must not lose or reorder any event.
        expect(resumed.events.slice(0, session.length).map((e) => [e.seq, e.type])).toEqual(
          session.events.map((e) => [e.seq, e.type]),
        )
        outcomes.intact++
      }
      await ctx.sessionPersistence.close(resumed)
    }

    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: original.length - 1 }), async (cut) => {
        await check(original.subarray(0, cut), 'truncate', cut)
      }),
      { numRuns: 60 },
    )
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: original.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        async (at, mask) => {
          const damaged = Buffer.from(original)
          damaged[at] = (damaged[at] as number) ^ mask
          await check(damaged, 'flip', original.length)
        },
      ),
      { numRuns: 150 },
    )
    expect(outcomes.repaired).toBeGreaterThan(0)
    expect(outcomes.refused).toBeGreaterThan(0)
    await ctx.dispose()
  }, 30_000)

  it('tells a torn tail from a whole last line that lost its newline', () => {
    const header = '{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/"}\n'
    const line = '{"type":"turn/start","seq":0,"time":1,"data":{}}'
    expect(parseJsonl(Buffer.from(`${header}${line.slice(0, 20)}`), 'f').torn?.bytes).toBe(20)
    expect(parseJsonl(Buffer.from(`${header}${line}`), 'f').torn?.bytes).toBe(line.length)
    expect(() => parseJsonl(Buffer.from(`${header}${line}X`), 'f')).toThrow(/lost its newline/)
    expect(() => parseJsonl(Buffer.from(`${header}${line.slice(0, 20)}\n`), 'f')).toThrow(
      expect.objectContaining({ code: 'SESSION_CORRUPT', message: expect.stringContaining('line 2') }),
    )
  })
})
