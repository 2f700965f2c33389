// The checkpoint policy: before each model dispatch, each top-level tool body and each accepted
// pre-step, flush the session so the prefix that caused the action is durable. A failed flush
// blocks the action (fail closed). Call sites use `ctx.sessions.checkpoint(session, boundary)`.
// Group commit: a pre-step is followed by the step's model dispatch before anything acts on the
// world, so by default it only writes (the events survive the process being killed) and the
// dispatch's sync makes both durable at once: two syncs per tool step instead of three.
import { type Context, directService, HarnessError } from '@dsh/kernel'
import type { CheckpointBoundary, CheckpointRequest } from '../index.js'

export interface CheckpointConfig {
  /** The boundaries that flush; default all three. */
  boundaries?: CheckpointBoundary[]
  /** Block the action when no persistence backend is registered (flush returned false). Default false. */
  requireDurable?: boolean
  /**
   * Boundaries that write without syncing; the next synced boundary (a model dispatch or a tool body
   * always follows before any side effect) syncs them too. Default ['pre-step']; [] syncs at every one.
   */
  writeOnly?: CheckpointBoundary[]
}

const ALL: CheckpointBoundary[] = ['model-dispatch', 'tool-body', 'pre-step']

/** Row `session-checkpoint`, module `@dsh/session/store/checkpoint`. */
export const name = 'session-checkpoint'
export const inject = ['sessions']

export function apply(ctx: Context, config: CheckpointConfig = {}): void {
  const boundaries = new Set(config?.boundaries ?? ALL)
  const writeOnly = new Set<CheckpointBoundary>(config?.writeOnly ?? ['pre-step'])
  for (const boundary of [...boundaries, ...writeOnly]) {
    if (!ALL.includes(boundary)) {
      throw new HarnessError(
        'CONFIG_INVALID',
        `session-checkpoint: unknown boundary "${boundary}"; use ${ALL.join(', ')}`,
        { boundary },
      )
    }
  }
  // Three times per tool step: without Cordis's per-call proxies (decision 351).
  const sessions = directService(ctx, 'sessions')
  ctx.on('session/checkpoint', async ({ session, boundary, detail }: CheckpointRequest) => {
    if (!boundaries.has(boundary)) return
    let durable: boolean
    try {
      durable = await (sessions() ?? ctx.sessions).flush(session, { sync: !writeOnly.has(boundary) })
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      throw new HarnessError(
        'SESSION_CHECKPOINT_FAILED',
        `checkpoint before ${boundary}${detail ? ` (${detail})` : ''} failed, so the action was not started: ${reason}`,
        { id: session.id, boundary, detail: detail ?? null, reason },
        { cause: error },
      )
    }
    if (!durable && config?.requireDurable) {
      throw new HarnessError(
        'SESSION_CHECKPOINT_FAILED',
        `checkpoint before ${boundary}: no session persistence is loaded, and this policy requires durability; enable a session store row`,
        { id: session.id, boundary, detail: detail ?? null },
      )
    }
  })
}

export default { name, inject, apply }
