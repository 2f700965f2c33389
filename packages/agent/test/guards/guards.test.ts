// The shipped guards on a real agent loop and tool pipeline, the model scripted: outcomes are read
// from the session log (tool results, turn end, approval facts) and from what the next request held.

import { defineTool, ToolError } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import type { ToolResultMessage } from '@dsh/llm'
import { calls, dataOf, startInProcess, text } from '@dsh/test-support/in-process'
import { describe, expect, it } from 'vitest'
import * as largeWrite from '../../src/guards/large-write.js'
import * as repeat from '../../src/guards/repeat.js'
import * as timeout from '../../src/guards/timeout.js'

const textOf = (message: ToolResultMessage | undefined) =>
  (message?.content ?? []).map((block) => (block.type === 'text' ? block.text : '')).join('\n')

/** Tools for the tests: `flaky` always fails, `sleep` waits for its signal (or not), `write` records. */
function testTools(root: Context, written: string[] = []) {
  root.tools.register(
    defineTool<{ x: number }>({
      name: 'flaky',
      description: 'fails',
      parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
      execute: () => {
        throw new ToolError('the thing is broken')
      },
    }),
  )
  root.tools.register(
    defineTool<{ ms: number; stubborn?: boolean }>({
      name: 'sleep',
      description: 'waits',
      parameters: { type: 'object', properties: { ms: { type: 'number' }, stubborn: { type: 'boolean' } } },
      execute: (args, call) =>
        new Promise((resolve) => {
          const handle = setTimeout(() => resolve('slept'), args.ms)
          if (args.stubborn) return
          call.signal.addEventListener('abort', () => {
            clearTimeout(handle)
            resolve('partial')
          })
        }),
    }),
  )
  root.tools.register(
    defineTool<{ path: string; content: string }>({
      name: 'write',
      description: 'writes',
      parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } },
      execute: (args) => {
        written.push(args.path)
        return 'written'
      },
    }),
  )
}

describe('repeat-call breaker', () => {
  it('tells the model to change approach in the third identical failure, refuses the next ones, stops the turn at five', async () => {
    const { root, adapter } = await startInProcess({
      after: (root) => testTools(root),
      before: (root) => {
        root.plugin(repeat, { warnAfter: 3, stopAfter: 5 })
      },
      script: [
        calls(['c1', 'flaky', { x: 1 }]),
        calls(['c2', 'flaky', { x: 1 }]),
        calls(['c3', 'flaky', { x: 1 }]),
        calls(['c4', 'flaky', { x: 1 }]),
        calls(['c5', 'flaky', { x: 1 }]),
        text('never asked'),
      ],
    })
    const agent = await root.agents.create({})
    agent.followup('go')
    await agent.whenIdle()
    const results = dataOf(agent.session, 'tool/result').map((data) => data.message)
    expect(results.map((m) => textOf(m).includes('repeat-call breaker'))).toEqual([false, false, true, true, true])
    expect(textOf(results[2])).toMatch(
      /^the thing is broken\n\[repeat-call breaker\] This exact flaky call .* failed 3 times/,
    )
    // The fourth and fifth were refused by the guard: the body did not run again.
    expect(dataOf(agent.session, 'tool/result').map((data) => data.code)).toEqual([
      'TOOL_ERROR',
      'TOOL_ERROR',
      'TOOL_ERROR',
      'DENIED',
      'DENIED',
    ])
    expect(dataOf(agent.session, 'turn/end')).toEqual([
      { reason: 'blocked', message: expect.stringMatching(/^repeat-call breaker: the same flaky call failed 5 times/) },
    ])
    expect(adapter.dispatches).toHaveLength(5)
  })

  it('counts per arguments (key order ignored), clears on success and on a new turn', async () => {
    const { root } = await startInProcess({
      after: (root) => testTools(root),
      before: (root) => {
        root.plugin(repeat, { warnAfter: 2, stopAfter: 9 })
      },
      script: [
        calls(['a1', 'flaky', { x: 1 }], ['b1', 'flaky', { x: 2 }]),
        calls(['a2', 'flaky', { x: 1 }]),
        text('turn one over'),
        calls(['a3', 'flaky', { x: 1 }]),
        text('done'),
      ],
    })
    const agent = await root.agents.create({})
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    const codes = dataOf(agent.session, 'tool/result').map((data) => [data.message.toolCallId, data.code])
    // b1 has other arguments; a2 reaches two and warns; a3 runs again in the new turn (not DENIED).
    expect(codes).toEqual([
      ['a1', 'TOOL_ERROR'],
      ['b1', 'TOOL_ERROR'],
      ['a2', 'TOOL_ERROR'],
      ['a3', 'TOOL_ERROR'],
    ])
    const results = dataOf(agent.session, 'tool/result').map((data) => textOf(data.message))
    expect(results.map((t) => t.includes('repeat-call breaker'))).toEqual([false, false, true, false])
  })
})

describe('per-tool timeout', () => {
  it('stops a body past its limit and keeps its partial result; abandons one that does not stop', async () => {
    const { root } = await startInProcess({
      after: (root) => testTools(root),
      before: (root) => {
        root.plugin(timeout, { defaultMs: 5000, tools: { sleep: 50 }, graceMs: 50 })
      },
      script: [calls(['s1', 'sleep', { ms: 10_000 }], ['s2', 'sleep', { ms: 10_000, stubborn: true }]), text('ok')],
    })
    const agent = await root.agents.create({})
    agent.followup('go')
    await agent.whenIdle()
    const results = dataOf(agent.session, 'tool/result')
    expect(results.map((data) => data.code)).toEqual(['TOOL_TIMEOUT', 'TOOL_TIMEOUT'])
    expect(textOf(results[0]?.message)).toMatch(/^partial\n\[Tool "sleep" did not finish within its 0.1 s limit/)
    expect(textOf(results[1]?.message)).toMatch(/^Tool "sleep" did not finish within its 0.1 s limit and was stopped/)
  })

  it('refuses a bad limit at load with the fix in the message', async () => {
    const { root } = await startInProcess({})
    await expect((async () => root.plugin(timeout, { tools: { bash: -1 } }))()).rejects.toThrow(
      /tools\.bash must be a whole number of milliseconds >= 0/,
    )
  })
})

describe('large-write guard', () => {
  it('asks before a write over the limit (once), lets small writes through', async () => {
    const written: string[] = []
    const asked: string[] = []
    const { root } = await startInProcess({
      before: (root) => {
        root.plugin(largeWrite, { maxBytes: 10 })
      },
      after: (root) => {
        testTools(root, written)
        root.approval.answer((request) => {
          asked.push(String(request.reason))
          return 'rejected'
        })
      },
      script: [
        calls(
          ['w1', 'write', { path: 'small.txt', content: 'tiny' }],
          ['w2', 'write', { path: 'big.txt', content: 'x'.repeat(11) }],
        ),
        text('done'),
      ],
    })
    const agent = await root.agents.create({})
    agent.followup('go')
    await agent.whenIdle()
    expect(written).toEqual(['small.txt'])
    expect(asked).toEqual(['a large write to big.txt: 11 bytes, over the 10-byte limit that needs approval'])
    expect(dataOf(agent.session, 'tool/result').map((data) => data.code)).toEqual([undefined, 'APPROVAL_REJECTED'])
  })
})
