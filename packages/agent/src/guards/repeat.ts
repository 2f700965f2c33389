// @dsh/agent/guards/repeat: the repeat-call breaker. It counts failures of the same call (tool name plus
// arguments, key order ignored) per session; a success of that call clears its count, a new turn
// clears them all. At `warnAfter` failures the failing result itself tells the model to change
// approach (so the very next request differs); further identical calls are not run; once one call has
// failed `stopAfter` times the turn ends `blocked` at its next step.

import type { Context } from '@dsh/kernel'
import { HarnessError } from '@dsh/kernel'
import type {} from '../index.js'
import type { ToolCallInput, ToolExecution, ToolOutcome } from '../tools/index.js'
import { stableJson } from './index.js'

export const name = 'guard-repeat'
export const inject = ['tools']

export interface RepeatBreakerConfig {
  /** Identical failures after which the result tells the model to change approach. Default 3. */
  warnAfter?: number
  /** Identical failures after which the turn stops (`blocked`). Default 5; must be >= warnAfter. */
  stopAfter?: number
}

/** Per session, per call key: how many times in a row that call failed, and its tool for messages. */
type Failures = Map<string, { tool: string; failures: number }>

function positive(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new HarnessError('INVALID_GUARD_CONFIG', `guard-repeat: ${where} must be an integer >= 1`, { where })
  }
  return value
}

export function apply(ctx: Context, config: RepeatBreakerConfig = {}): void {
  const warnAfter = positive(config?.warnAfter ?? 3, 'warnAfter')
  const stopAfter = positive(config?.stopAfter ?? Math.max(5, warnAfter), 'stopAfter')
  if (stopAfter < warnAfter) {
    throw new HarnessError('INVALID_GUARD_CONFIG', 'guard-repeat: stopAfter must be >= warnAfter', {
      warnAfter,
      stopAfter,
    })
  }
  const sessions = new Map<string, Failures>()
  const countsOf = (sessionId: string | undefined): Failures => {
    const id = sessionId ?? ''
    const counts = sessions.get(id) ?? new Map()
    sessions.set(id, counts)
    return counts
  }
  const keyOf = (call: Pick<ToolCallInput, 'toolName' | 'args'>) => `${call.toolName}\u0000${stableJson(call.args)}`
  const changeApproach = (tool: string, failures: number) =>
    `This exact ${tool} call (same arguments) has now failed ${failures} times. Repeating it will fail again: ` +
    'change the approach (different arguments, another tool, or read the error and fix its cause). Identical ' +
    `calls will not be run; at ${stopAfter} failures the turn stops.`
  const fail = (counts: Failures, key: string, tool: string) => {
    const failures = (counts.get(key)?.failures ?? 0) + 1
    counts.set(key, { tool, failures })
    return failures
  }

  // A call that already failed `warnAfter` times is not run again; the refusal counts as a failure.
  ctx.tools.guard(name, (call) => {
    const counts = countsOf(call.sessionId)
    const key = keyOf(call)
    if ((counts.get(key)?.failures ?? 0) < warnAfter) return undefined
    return { deny: `repeat-call breaker: ${changeApproach(call.toolName, fail(counts, key, call.toolName))}` }
  })

  // Bodies that ran: a success clears the call's count; the failure that reaches `warnAfter` carries
  // the notice in its own result, so the model's next request already differs.
  ctx.on('tools/post-execute', async (execution: ToolExecution, next: () => Promise<ToolOutcome>) => {
    const outcome = await next()
    const counts = countsOf(execution.sessionId)
    const key = keyOf(execution)
    if (!outcome.isError) {
      counts.delete(key)
      return outcome
    }
    const failures = fail(counts, key, execution.toolName)
    if (failures < warnAfter) return outcome
    const notice = `[repeat-call breaker] ${changeApproach(execution.toolName, failures)}`
    return { ...outcome, content: [...outcome.content, { type: 'text', text: notice }] }
  })

  // A new turn starts clean; a step after `stopAfter` identical failures ends the turn instead.
  ctx.on('agent/pre-step', async (input, next) => {
    const counts = sessions.get(input.session.id)
    if (input.first) sessions.delete(input.session.id)
    const stuck = !input.first && counts && [...counts.values()].find((entry) => entry.failures >= stopAfter)
    if (stuck) {
      return {
        action: 'reject',
        reason: `repeat-call breaker: the same ${stuck.tool} call failed ${stuck.failures} times with the same arguments; the turn stops so a person can look`,
      }
    }
    return next()
  })

  ctx.effect(() => () => sessions.clear(), 'guard-repeat.state')
}

export default { name, inject, apply }
