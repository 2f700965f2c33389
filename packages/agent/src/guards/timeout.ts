// @dsh/agent/guards/timeout: a time limit per tool, around every body (`tools/execute`). When the limit
// passes, the body's signal aborts; a body that stops returns its partial result with a note, one
// that does not stop within `graceMs` is abandoned with a TOOL_TIMEOUT result (its late result is
// dropped). Tools with their own limit (bash) or that wait on people or children get 0 (no limit).

import type { Context } from '@dsh/kernel'
import { HarnessError } from '@dsh/kernel'
import type { ToolExecution, ToolOutcome } from '../tools/index.js'

export const name = 'guard-timeout'
export const inject = ['tools']

export interface TimeoutConfig {
  /** Milliseconds for a tool not in `tools`. 0 means no limit. Default 300000. */
  defaultMs?: number
  /** Per-tool limits by tool name; 0 means no limit. Merged over the shipped defaults below. */
  tools?: Record<string, number>
  /** How long a stopped body may take to return its partial result. Default 2000. */
  graceMs?: number
}

/**
 * Shipped defaults: bash and job tools carry their own timeouts (bash up to its 600 s maximum);
 * task, subagent_send, ask_user and run_code wait on other agents, people or nested calls that are
 * limited themselves.
 */
export const DEFAULT_TOOL_TIMEOUTS: Readonly<Record<string, number>> = Object.freeze({
  bash: 0,
  job_output: 0,
  task: 0,
  subagent_send: 0,
  ask_user: 0,
  run_code: 0,
  web_fetch: 120_000,
  web_search: 60_000,
  code_nav: 60_000,
})

function checkMs(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new HarnessError(
      'INVALID_GUARD_CONFIG',
      `guard-timeout: ${where} must be a whole number of milliseconds >= 0 (0 = no limit), got ${JSON.stringify(value)}`,
      { where },
    )
  }
  return value
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`

export function apply(ctx: Context, config: TimeoutConfig = {}): void {
  const defaultMs = checkMs(config?.defaultMs ?? 300_000, 'defaultMs')
  const graceMs = checkMs(config?.graceMs ?? 2000, 'graceMs')
  const limits = new Map(Object.entries(DEFAULT_TOOL_TIMEOUTS))
  for (const [tool, ms] of Object.entries(config?.tools ?? {})) limits.set(tool, checkMs(ms, `tools.${tool}`))

  ctx.on('tools/execute', async (execution: ToolExecution, next: () => Promise<ToolOutcome>) => {
    const limit = limits.get(execution.toolName) ?? defaultMs
    if (limit === 0) return next()
    const timer = new AbortController()
    execution.link(timer.signal)
    const note =
      `Tool "${execution.toolName}" did not finish within its ${seconds(limit)} limit and was stopped. ` +
      'Do a smaller step (a narrower path or pattern, fewer files), or run long work in the background.'
    let abandon: (() => void) | undefined
    const abandoned = new Promise<'abandoned'>((resolve) => {
      abandon = () => resolve('abandoned')
    })
    const handle = setTimeout(() => {
      timer.abort(new Error(`timed out after ${seconds(limit)}`))
      setTimeout(() => abandon?.(), graceMs).unref?.()
    }, limit)
    try {
      const outcome = await Promise.race([next(), abandoned])
      if (outcome === 'abandoned') {
        return {
          content: [{ type: 'text', text: note }],
          isError: true,
          errorCode: 'TOOL_TIMEOUT',
          additionalContext: [],
        }
      }
      if (!timer.signal.aborted) return outcome
      // Stopped in time: keep what the body produced, and say why it is partial.
      return {
        ...outcome,
        content: [...outcome.content, { type: 'text', text: `[${note}]` }],
        isError: true,
        errorCode: 'TOOL_TIMEOUT',
      }
    } finally {
      clearTimeout(handle)
      abandon = undefined
    }
  })
}

export default { name, inject, apply }
