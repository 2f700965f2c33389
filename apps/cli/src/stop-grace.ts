// After SIGINT/SIGTERM a command cancels its work and disposes its tree; a tool body that ignores its
// abort signal would keep dsh alive until a supervisor's SIGKILL, losing the unflushed log. Every
// command that runs sessions (`run`, `rpc`, `acp`, `web`) arms this grace when the signal arrives:
// past it, what the log holds is made durable and the process exits with the signal's code.
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/session'
import type { Io } from './io.js'

/** How long a cancelled command may take to stop after SIGINT/SIGTERM. */
export const STOP_GRACE_MS = 5_000
/** How long the last-resort flush may take before dsh exits anyway. */
const ABANDON_FLUSH_MS = 3_000

/**
 * The command did not stop within the grace: make what the log holds durable and exit with `code`.
 * A running call stays without a result; a resume closes it with TOOL_OUTCOME_UNKNOWN.
 */
async function abandon(root: Context, io: Io, code: number, beforeExit?: () => void): Promise<never> {
  try {
    beforeExit?.()
  } catch {}
  io.err(
    `dsh: a running tool did not stop within ${STOP_GRACE_MS / 1000} s of the signal; saving the session as it is and exiting (a resume marks that call's outcome unknown)`,
  )
  const flushed = root.get('sessions')?.flush()
  await Promise.race([flushed?.catch(() => {}), new Promise((done) => setTimeout(done, ABANDON_FLUSH_MS))])
  return io.forceExit(code)
}

/**
 * Arms the grace (call it when the signal arrives). Not cleared when the command returns: it also
 * bounds the tree's teardown. Call `release` then: it unrefs the timer, so a process with nothing left
 * to do exits without waiting for it. `beforeExit` runs first when the grace expires (the chat gives
 * the terminal back).
 */
export function armStopGrace(root: Context, io: Io, code: number, beforeExit?: () => void): { release(): void } {
  const timer = setTimeout(() => void abandon(root, io, code, beforeExit), STOP_GRACE_MS)
  return { release: () => timer.unref() }
}
