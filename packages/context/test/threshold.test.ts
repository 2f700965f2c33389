// The compaction threshold the user controls (issue 33): `compaction.threshold` in settings.yaml moves
// where threshold compaction fires, and /context says where that is and what fills the window.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool } from '@dsh/agent/tools'
import { createScriptedAdapter } from '@dsh/llm/scripted'
import SettingsService from '@dsh/settings'
import { describe, expect, it } from 'vitest'
import type TokenMeterService from '../src/meter.js'
import { createContextHarness } from './harness.js'

const call = (id: string) => ({
  role: 'assistant' as const,
  content: [{ type: 'tool-call' as const, id, name: 'note', arguments: {} }],
  finishReason: 'tool-calls' as const,
})
const say = (text: string) => ({
  role: 'assistant' as const,
  content: [{ type: 'text' as const, text }],
  finishReason: 'stop' as const,
})

/** Runs ten note-taking steps under a 2,000-token window; the step before which compaction first ran. */
async function firstCompaction(threshold: number | undefined): Promise<{ step: number; context: string }> {
  const home = mkdtempSync(join(tmpdir(), 'dsh-threshold-'))
  try {
    if (threshold !== undefined) writeFileSync(join(home, 'settings.yaml'), `compaction.threshold: ${threshold}\n`)
    let steps = 0
    const adapter = createScriptedAdapter(
      Array.from({ length: 40 }, () => (dispatch: { request: { system?: string } }) => {
        if (dispatch.request.system?.startsWith('You compact the history')) return say('summary of the notes')
        steps++
        return steps <= 10 ? call(`n${steps}`) : say('done')
      }),
    )
    const root = await createContextHarness({
      adapter,
      meter: { contextWindow: 2000 },
      pruning: false,
      compaction: { keepRatio: 0.2 },
      before: async (root) => {
        await root.plugin(SettingsService, { home, cwd: home })
      },
    })
    root.tools.register(
      defineTool({
        name: 'note',
        description: 'notes',
        parameters: { type: 'object' },
        execute: () => 'n'.repeat(600),
      }),
    )
    const agent = await root.agents.create()
    agent.followup('take notes')
    await agent.whenIdle()
    let step = 0
    for (const event of agent.session.events) {
      if (event.type === 'step/start') step++
      if (event.type === 'compaction/end') break
    }
    const meter = root.get('tokenMeter') as TokenMeterService | undefined
    const context = meter?.describe(agent.session).text ?? ''
    return { step, context }
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}

describe('compaction.threshold', () => {
  it('fires earlier when set lower, and /context says where and what fills the window', async () => {
    const low = await firstCompaction(0.3)
    const high = await firstCompaction(0.9)
    expect(low.step).toBeGreaterThan(0)
    expect(low.step).toBeLessThan(high.step)
    expect(low.context).toContain('compaction: when a request would pass 30% of the window (about 600 tokens)')
    expect(high.context).toContain('when a request would pass 90% of the window')
    expect(low.context).toMatch(/\d+ {2}system prompt/)
    expect(low.context).toMatch(/\d+ {2}tool schemas \(1 tool\)/)
    expect(low.context).toMatch(/\d+ {4}tool note/)
    expect(low.context).toMatch(/\d+ {2}conversation \(\d+ messages\)/)
  })
})
