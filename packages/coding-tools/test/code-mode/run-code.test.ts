// run_code's budgets on the real agent loop and tool pipeline (scripted model): a program past its
// time is stopped (a busy loop after an await included), the call budget refuses the extra call,
// and a tool error inside the program is catchable with the tool's own text.

import { defineTool, ToolError } from '@dsh/agent/tools'
import type {} from '@dsh/coding-tools/code-mode'
import type { ToolResultMessage } from '@dsh/llm'
import { calls, dataOf, startInProcess, text } from '@dsh/test-support/in-process'
import { describe, expect, it } from 'vitest'
import * as runCode from '../../src/code-mode/run-code.js'

const textOf = (message: ToolResultMessage | undefined) =>
  (message?.content ?? []).map((block) => (block.type === 'text' ? block.text : '')).join('\n')

async function run(code: string, args: Record<string, unknown> = {}) {
  const { root } = await startInProcess({
    before: (root) => {
      root.plugin(runCode, { timeoutMs: 1500 })
    },
    after: (root) => {
      root.tools.register(
        defineTool<{ fail?: boolean }>({
          name: 'ping',
          description: 'answers pong',
          parameters: { type: 'object', properties: { fail: { type: 'boolean' } } },
          execute: (args) => {
            if (args.fail) throw new ToolError('ping failed on purpose')
            return 'pong'
          },
        }),
      )
    },
    script: [calls(['p1', 'run_code', { code, ...args }]), text('done')],
  })
  const agent = await root.agents.create({})
  agent.followup('go')
  await agent.whenIdle()
  const result = dataOf(agent.session, 'tool/result')[0]
  return { code: result?.code, text: textOf(result?.message), nested: dataOf(agent.session, 'tool/nested-call') }
}

describe('run_code budgets', () => {
  it('stops a program that keeps the CPU busy after an await', async () => {
    const result = await run('await tools.ping({})\nfor (;;) {}')
    expect(result.code).toBe('RUN_CODE_FAILED')
    expect(result.text).toMatch(
      /^\[error\] run_code stopped: the program ran past its 1500 ms limit\n\[run_code: 1 tool call\]$/,
    )
  })

  it('refuses calls past max_calls; a tool error is catchable with its text', async () => {
    const code = [
      'const seen = []',
      'try { await tools.ping({ fail: true }) } catch (e) { seen.push(e.message) }',
      'try { await tools.ping({}) } catch (e) { seen.push(e.message) }',
      'try { await tools.run_code({ code: "" }) } catch (e) { seen.push(e.message) }',
      'return seen',
    ].join('\n')
    const result = await run(code, { max_calls: 1 })
    expect(result.nested.map((data) => data.call.id)).toEqual(['p1.1'])
    expect(result.text).toBe(
      `${JSON.stringify(
        [
          'ping failed on purpose',
          'call budget exhausted: at most 1 tool calls per run_code run',
          'tools.run_code is not a function',
        ],
        null,
        2,
      )}\n[run_code: 1 tool call]`,
    )
  })

  it('cuts a huge result and console output in the worker: the logged result stays small', async () => {
    const code = [
      "const big = 'x'.repeat(30_000_000)",
      'for (let i = 0; i < 5; i++) console.log(big)',
      'return big',
    ].join('\n')
    const result = await run(code)
    expect(result.code).toBeUndefined()
    // 20000 characters of console output and 1000000 of result are kept, not 150 + 30 million.
    expect(result.text.length).toBeLessThan(1_100_000)
    expect(result.text).toContain('[console output cut]')
    expect(result.text).toContain('[result cut at 1000000 of 30000000 characters]')
  })
})
