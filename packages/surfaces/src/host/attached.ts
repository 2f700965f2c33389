// A session a host drives: its agent, whether the host must close the session itself, and the
// per-session resources a surface hung on it, undone newest first when it is released.
import type { Agent } from '@dsh/agent'
import type { Disposer } from './options.js'

export interface Attached {
  agent: Agent
  /** Sessions the host restored or forked; the agent closes the ones it created. */
  ownsSession: boolean
  resources: Disposer[]
}

/** Runs the session's resource disposers, newest first; a failing one is logged, never thrown. */
export function disposeResources(sessionId: string, attached: Attached, log: (line: string) => void): void {
  for (const dispose of attached.resources.splice(0).reverse()) {
    try {
      const done = dispose()
      if (done instanceof Promise) done.catch((error) => log(`cleanup of ${sessionId} failed: ${String(error)}`))
    } catch (error) {
      log(`cleanup of session ${sessionId} failed: ${String(error)}`)
    }
  }
}
