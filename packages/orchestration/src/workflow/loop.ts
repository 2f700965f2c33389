// Loop until done: each iteration runs the task in a fresh child session, then the check command (in
// the parent session's working directory, through ctx.shell and so the session's sandbox). The check's
// output goes into the next iteration's prompt. The loop stops when the check exits 0, after
// `maxIterations`, when the children's tokens reach `tokenBudget`, or on cancel. Every iteration is
// logged in the parent's session with its child, its tokens and the check's result.
import type { Agent } from '@dsh/agent'
import { type Context, HarnessError } from '@dsh/kernel'
import type { Session, SessionEventMap } from '@dsh/session'
import type {} from '@dsh/world/shell'
import type { SubagentOutcome } from '../subagents/index.js'
import { modelOverride } from './engine.js'

/** `interrupted` (synthetic): the process ended while the loop ran; `/loop resume` continues it. */
export type LoopOutcome = 'passed' | 'max-iterations' | 'budget' | 'cancelled' | 'failed' | 'interrupted'

export interface LoopRequest {
  /** The task each iteration's child gets. */
  task: string
  /** The check: a shell command; exit 0 means done. */
  until: string
  /** Default: config `maxIterations` (5). */
  maxIterations?: number
  /** Stop once the children together used this many tokens (as the provider reported them). */
  tokenBudget?: number
  /** Deadline of one check run (default: the shell's). */
  checkTimeoutMs?: number
  /** Subagent provider and model of the children. */
  provider?: string
  model?: string
  signal?: AbortSignal
  origin?: 'tool' | 'command' | 'rpc'
  callId?: string
}

export interface LoopResult {
  loopId: string
  outcome: LoopOutcome
  iterations: number
  tokens: number
  /** The last check's output (bounded). */
  output: string
  /** The last child's report. */
  text: string
  message?: string
}

declare module '@dsh/session' {
  interface SessionEventMap {
    'loop/started': {
      loopId: string
      task: string
      until: string
      maxIterations: number
      tokenBudget?: number
      provider?: string
      model?: string
      checkTimeoutMs?: number
      origin: 'tool' | 'command' | 'rpc'
      callId?: string
    }
    /** One iteration: its child, the tokens it used and what the check said. */
    'loop/iteration': {
      loopId: string
      iteration: number
      subagentId: string
      childSession: string
      outcome: SubagentOutcome
      tokens: number
      exitCode: number | null
      passed: boolean
      output: string
    }
    /** A stopped loop continues after its last logged iteration. */
    'loop/resumed': { loopId: string; origin: 'tool' | 'command' | 'rpc'; iteration: number }
    'loop/finished': {
      loopId: string
      outcome: LoopOutcome
      iterations: number
      tokens: number
      message?: string
      synthetic?: true
    }
  }
}

export const LOOP_EVENT_TYPES = ['loop/started', 'loop/iteration', 'loop/resumed', 'loop/finished'] as const

/** Where a loop stands: what a resume folded from the log, or nothing yet for a new loop. */
export interface LoopState {
  iteration: number
  tokens: number
  last?: { exitCode: number | null; output: string }
}

const OUTPUT_CHARS = 4000

function tail(text: string): string {
  return text.length <= OUTPUT_CHARS
    ? text
    : `[... ${text.length - OUTPUT_CHARS} characters omitted]\n${text.slice(-OUTPUT_CHARS)}`
}

/** Tokens a child's session reports for its model calls. */
function tokensOf(session: Session | undefined): number {
  let total = 0
  for (const event of session?.events ?? []) {
    if (event.type === 'assistant/message') total += event.data.message.usage?.totalTokens ?? 0
  }
  return total
}

function promptFor(
  request: LoopRequest,
  iteration: number,
  max: number,
  last?: { exitCode: number | null; output: string },
) {
  if (!last) return request.task
  return [
    request.task,
    '',
    `This is attempt ${iteration} of at most ${max}. After the previous attempt the check \`${request.until}\` still fails (exit ${last.exitCode ?? 'none'}). Its output:`,
    last.output || '(no output)',
    'Find out why and fix it; the work of earlier attempts is in the files.',
  ].join('\n')
}

/** Throws `LOOP_INVALID` naming every problem of a request. */
export function checkLoop(request: LoopRequest, maxIterations: number): void {
  const problems: string[] = []
  if (typeof request.task !== 'string' || request.task.trim() === '') problems.push('task must be a non-empty string')
  if (typeof request.until !== 'string' || request.until.trim() === '') {
    problems.push('until must be a shell command (exit 0 = done), e.g. "npm test"')
  }
  if (!Number.isInteger(maxIterations) || maxIterations < 1 || maxIterations > 100) {
    problems.push('maxIterations must be an integer from 1 to 100')
  }
  if (request.tokenBudget !== undefined && (!Number.isInteger(request.tokenBudget) || request.tokenBudget < 1)) {
    problems.push('tokenBudget must be a positive integer')
  }
  if (problems.length > 0) {
    throw new HarnessError('LOOP_INVALID', `loop: ${problems.join('; ')}`, { problems })
  }
}

/**
 * Runs the loop `loopId` (the request was checked with `checkLoop`). Never rejects: a child that cannot
 * start or a check that cannot run ends the loop `failed` with the reason.
 */
export async function runLoop(
  ctx: Context,
  parent: Agent,
  loopId: string,
  request: LoopRequest,
  maxIterations: number,
  resumed?: LoopState,
): Promise<LoopResult> {
  const session = parent.session
  const log = <T extends keyof SessionEventMap>(type: T, data: SessionEventMap[T]) => {
    if (ctx.sessions.get(session.id) === session) session.append(type, data)
  }
  if (resumed) log('loop/resumed', { loopId, origin: request.origin ?? 'rpc', iteration: resumed.iteration + 1 })
  else {
    log('loop/started', {
      loopId,
      task: request.task,
      until: request.until,
      maxIterations,
      ...(request.tokenBudget !== undefined ? { tokenBudget: request.tokenBudget } : {}),
      ...(request.provider !== undefined ? { provider: request.provider } : {}),
      ...(request.model !== undefined ? { model: request.model } : {}),
      ...(request.checkTimeoutMs !== undefined ? { checkTimeoutMs: request.checkTimeoutMs } : {}),
      origin: request.origin ?? 'rpc',
      ...(request.callId !== undefined ? { callId: request.callId } : {}),
    })
  }
  let tokens = resumed?.tokens ?? 0
  let last = resumed?.last
  let text = ''
  let iteration = resumed?.iteration ?? 0
  const finish = (outcome: LoopOutcome, message?: string): LoopResult => {
    log('loop/finished', { loopId, outcome, iterations: iteration, tokens, ...(message ? { message } : {}) })
    return {
      loopId,
      outcome,
      iterations: iteration,
      tokens,
      output: last?.output ?? '',
      text,
      ...(message ? { message } : {}),
    }
  }
  try {
    return await iterate()
  } catch (error) {
    return finish(
      request.signal?.aborted ? 'cancelled' : 'failed',
      error instanceof Error ? error.message : String(error),
    )
  }

  async function iterate(): Promise<LoopResult> {
    const shell = ctx.get('shell')
    if (!shell) {
      throw new HarnessError(
        'LOOP_NEEDS_SHELL',
        'a loop runs its check through ctx.shell; add a shell row (e.g. @dsh/world/shell/bash-sandbox)',
        {},
      )
    }
    const model = modelOverride(request.model)
    while (iteration < maxIterations) {
      if (request.signal?.aborted) return finish('cancelled', 'the loop was cancelled')
      iteration += 1
      const handle = await ctx.subagents.start({
        parent,
        prompt: promptFor(request, iteration, maxIterations, last),
        description: `loop ${loopId} attempt ${iteration}`,
        ...(request.signal ? { signal: request.signal } : {}),
        ...(request.provider !== undefined ? { provider: request.provider } : {}),
        ...(model ? { model } : {}),
      })
      let outcome: SubagentOutcome
      try {
        const report = await handle.result
        outcome = report.outcome
        text = report.text
        tokens += tokensOf(handle.agent?.session)
      } finally {
        await handle.dispose()
      }
      if (outcome === 'cancelled' || request.signal?.aborted) return finish('cancelled', 'the loop was cancelled')
      const result = await shell.run(
        shell.resolve({
          command: request.until,
          workdir: session.header.cwd,
          sessionId: session.id,
          ...(request.checkTimeoutMs !== undefined ? { timeoutMs: request.checkTimeoutMs } : {}),
          ...(request.signal ? { signal: request.signal } : {}),
        }),
      )
      last = { exitCode: result.exitCode, output: tail(result.output.text) }
      const passed = result.exitCode === 0 && !result.timedOut && !result.aborted
      log('loop/iteration', {
        loopId,
        iteration,
        subagentId: handle.id,
        childSession: handle.childSession,
        outcome,
        tokens,
        exitCode: result.exitCode,
        passed,
        output: last.output,
      })
      if (passed) return finish('passed')
      if (result.aborted) return finish('cancelled', 'the loop was cancelled')
      if (request.tokenBudget !== undefined && tokens >= request.tokenBudget) {
        return finish(
          'budget',
          `the children used ${tokens} tokens (budget ${request.tokenBudget}) and the check still fails`,
        )
      }
    }
    return finish('max-iterations', `the check still fails after ${maxIterations} iteration(s)`)
  }
}
