// @dsh/world/fs/observation: the observation policy for model-facing file tools. An edit needs a prior read
// of the file in the same session; a write over an existing file needs one too; both are guarded by
// the version that read saw, so a file changed on disk since is refused with a re-read instruction.
// The record lives in memory per session: a resumed session starts with no observations.
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/session'
import type { FileVersion, FsMutationDecision, FsMutationIntent, FsObservation } from './index.js'

export const name = 'fs-observation'

export interface ObservationConfig {
  /** Require a read before overwriting an existing file with `write` (default true). */
  requireReadBeforeWrite?: boolean
}

export function apply(ctx: Context, config: ObservationConfig = {}): void {
  const seen = new Map<string, Map<string, FileVersion>>()
  const record = (o: FsObservation) => {
    const key = o.sessionId ?? ''
    const files = seen.get(key) ?? new Map<string, FileVersion>()
    seen.set(key, files)
    files.set(o.path, o.version)
  }
  ctx.on('fs/observed', record)
  ctx.on('fs/mutated', record)
  ctx.on('session/closed', (session) => {
    seen.delete(session.id)
  })
  ctx.on('fs/mutation-intent', async (intent: FsMutationIntent, next: () => Promise<FsMutationDecision>) => {
    const observed = seen.get(intent.sessionId ?? '')?.get(intent.path)
    if (intent.current === undefined) {
      // A new file: nothing to have read. An edit of a missing file fails in the fs with FS_NOT_FOUND.
      return intent.kind === 'write' ? { action: 'allow' } : next()
    }
    if (observed === undefined) {
      if (intent.kind === 'write' && config?.requireReadBeforeWrite === false) return next()
      return {
        action: 'deny',
        code: 'FS_NOT_OBSERVED',
        message: `${intent.path} has not been read in this session. Read it with the read tool first, then retry the ${intent.kind}.`,
      }
    }
    if (observed !== intent.current) {
      return {
        action: 'deny',
        code: 'FS_VERSION_CONFLICT',
        message: `${intent.path} has changed on disk since you last read it. Read it again, then redo the ${intent.kind} against the current content.`,
      }
    }
    const decision = await next()
    return decision.action === 'allow' ? { action: 'allow', expectedVersion: observed } : decision
  })
}

/** The plugin (bundle rows use this default export). */
export default { name, apply }
