// A session's loops as its log tells them: the request, how many iterations were logged, the tokens
// so far and the last check's result. A resume continues from here, so a finished iteration is never
// run again; the one that was running at a crash (it never logged `loop/iteration`) runs again.
import type { AnySessionEvent } from '@dsh/session'
import type { LoopOutcome, LoopRequest } from './loop.js'

/** The request a loop was started with (what a resume runs again), as `loop/started` recorded it. */
type RecordedRequest = Pick<LoopRequest, 'task' | 'until' | 'tokenBudget' | 'provider' | 'model' | 'checkTimeoutMs'>

export interface LoopRecord extends RecordedRequest {
  loopId: string
  maxIterations: number
  /** `running` while the log has no end for it (a crash: `interrupted` once the session is restored). */
  status: 'running' | LoopOutcome
  /** The last iteration the log holds (0: none finished). */
  iterations: number
  /** The children's tokens up to that iteration. */
  tokens: number
  /** The last check's exit and output (what the next iteration is told). */
  last?: { exitCode: number | null; output: string }
  resumes: number
}

/** Folds every loop of a log (the events after the session's seed). */
export function foldLoops(events: readonly AnySessionEvent[]): LoopRecord[] {
  const records = new Map<string, LoopRecord>()
  for (const event of events) {
    switch (event.type) {
      case 'loop/started': {
        const { loopId, task, until, maxIterations, tokenBudget, provider, model, checkTimeoutMs } = event.data
        records.set(loopId, {
          loopId,
          task,
          until,
          maxIterations,
          ...(tokenBudget !== undefined ? { tokenBudget } : {}),
          ...(provider !== undefined ? { provider } : {}),
          ...(model !== undefined ? { model } : {}),
          ...(checkTimeoutMs !== undefined ? { checkTimeoutMs } : {}),
          status: 'running',
          iterations: 0,
          tokens: 0,
          resumes: 0,
        })
        break
      }
      case 'loop/iteration': {
        const record = records.get(event.data.loopId)
        if (!record) break
        record.iterations = event.data.iteration
        record.tokens = event.data.tokens
        record.last = { exitCode: event.data.exitCode, output: event.data.output }
        break
      }
      case 'loop/resumed': {
        const record = records.get(event.data.loopId)
        if (!record) break
        record.status = 'running'
        record.resumes += 1
        break
      }
      case 'loop/finished': {
        const record = records.get(event.data.loopId)
        if (record) record.status = event.data.outcome
        break
      }
    }
  }
  return [...records.values()]
}
