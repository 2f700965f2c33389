// A long answer and a loud command: the chat keeps up, shows only the tail of the output, stays
// cancellable, and its memory stays bounded. (Latencies are measured in bench/tui.mjs, not here.)
import { readFileSync } from 'node:fs'
import { isEvent } from '@dsh/session'
import { completionResponse, completionSteps } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

/** Peak resident memory of a process in MB (Linux), undefined elsewhere. */
function peakMb(pid: number): number | undefined {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return kb ? Number(kb) / 1024 : undefined
  } catch {
    return undefined
  }
}

describe('the chat under load', () => {
  it('streams a 2,000-line answer and a 50,000-line command, then Esc cancels a streaming turn', async () => {
    const lines = Array.from({ length: 2000 }, (_, i) =>
      i % 100 === 0 ? `## Part ${i / 100}` : `- line ${i} of the answer`,
    )
    const pieces: string[] = []
    for (let i = 0; i < lines.length; i += 20) pieces.push(`${lines.slice(i, i + 20).join('\n')}\n`)
    const call = { id: 'c1', name: 'bash', arguments: JSON.stringify({ command: 'seq 1 50000' }) }
    f.server.enqueue(
      completionResponse({ text: pieces, toolCalls: [call] }),
      completionResponse({ text: 'Counted.' }),
      // The third answer streams slowly and never ends: only a cancel stops it.
      { type: 'sse', steps: [...completionSteps({ text: ['Still '] }).slice(0, 2), { delayMs: 100 }, { hang: true }] },
    )
    const screen = f.open(['write', 'a', 'lot'], { rows: 40 })
    await screen.waitFor('Counted.', 60_000)
    const shown = screen.text()
    expect(shown).toContain('50000') // the tail of the command's output
    expect(shown).toMatch(/… \d+ more lines above/)
    expect(shown).not.toContain('\n1\n2\n3\n')
    await screen.press('go on\r', 'Still')
    await screen.press('\x1b', 'turn stopped')
    // Peak memory of the whole chat so far, read while the process still exists.
    const peak = peakMb(screen.pty.pid)
    await screen.press('\x04', /saved; continue it with/)
    expect(await screen.exited).toBe(0)
    if (process.platform === 'linux') expect(peak).toBeLessThan(400)
    const events = f.log()
    const answer = events.find((e) => isEvent(e, 'assistant/message'))
    expect(JSON.stringify(answer)).toContain('line 1999 of the answer')
    expect(events.filter((e) => isEvent(e, 'turn/end')).map((e) => e.data.reason)).toEqual(['completed', 'aborted'])
  })
})
