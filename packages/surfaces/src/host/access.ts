// What a host helper (jobs, modes, presets, commands) is given of its host: never the attach
// bookkeeping, only the agent of a session and a way to tell the surface that session changed.
import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/kernel'

export interface HostAccess {
  readonly ctx: Context
  /** The attached agent of a session; throws `SESSION_NOT_ATTACHED`. */
  agent(sessionId: string): Agent
  /** The attached agent of a session, if any. */
  attached(sessionId: string): Agent | undefined
  /** Tells the surface that a session's state may have changed (`stateChanged`). */
  changed(sessionId: string): void
}
