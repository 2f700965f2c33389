// The checkpoint policy: before each model dispatch, each top-level tool body, each accepted pre-step
// and at each turn end, flush the session so the prefix that caused the action is durable. A failed
// flush blocks the action (fail closed). Call sites use `ctx.sessions.checkpoint(session, boundary)`.
// Durability where it buys something (issue 35): a sync (fsync) only before a tool body with side
// effects and at turn end. A pre-step and a model dispatch only write (the events survive the process
// being killed; the next sync makes them durable against a power loss too), and a read-only tool's body
// (the tool declares `readOnly`) needs no barrier at all: its appends coalesce into the next write.
import { type Context, directService, HarnessError } from '@dsh/kernel'
import type { CheckpointBoundary, CheckpointRequest } from '../index.js'

export interface CheckpointConfig {
  /** The boundaries that flush; default all three. */
  boundaries?: CheckpointBoundary[]
  /** Block the action when no persistence backend is registered (flush returned false). Default false. */
  requireDurable?: boolean
  /**
   * Boundaries that write without syncing; the next synced boundary (a tool body with side effects or
   * the turn end) syncs them too. Default ['pre-step', 'model-dispatch']; [] syncs at every one.
   */
  writeOnly?: CheckpointBoundary[]
  /** Before a read-only tool's body: `none` (default), `write`, or `sync` (as any other tool). */
  readOnlyBodies?: 'none' | 'write' | 'sync'
}

const ALL: CheckpointBoundary[] = ['model-dispatch', 'tool-body', 'pre-step', 'turn-end']

/** Row `session-checkpoint`, module `@dsh/session/store/checkpoint`. */
export const name = 'session-checkpoint'
export const inject = ['sessions']

export function apply(ctx: Context, config: CheckpointConfig = {}): void {
  const boundaries = new Set(config?.boundaries ?? ALL)
  const writeOnly = new Set<CheckpointBoundary>(config?.writeOnly ?? ['pre-step', 'model-dispatch'])
  const readOnlyBodies = config?.readOnlyBodies ?? 'none'
  if (!['none', 'write', 'sync'].includes(readOnlyBodies))
    throw new HarnessError('CONFIG_INVALID', 'session-checkpoint: readOnlyBodies is none, write or sync', {
      readOnlyBodies,
    })
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
  ctx.on('session/checkpoint', async ({ session, boundary, detail, readOnly }: CheckpointRequest) => {
    if (!boundaries.has(boundary)) return
    const readOnlyBody = boundary === 'tool-body' && readOnly === true
    if (readOnlyBody && readOnlyBodies === 'none') return
    const sync = readOnlyBody ? readOnlyBodies === 'sync' : !writeOnly.has(boundary)
    let durable: boolean
    try {
      durable = await (sessions() ?? ctx.sessions).flush(session, { sync })
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
