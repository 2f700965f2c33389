// @dsh/kernel: the Cordis kernel as dsh plugins see it, plus the harness-wide error class and the
// invariants registry. Plugins import Cordis through this package so the pinned kernel is shared.

export { Context, CordisError, Fiber, Inject, Service, ValidationError } from 'cordis'
/** Cordis fiber states (Cordis declares them as a const enum, which isolated modules cannot re-export). */
export const FiberState = { PENDING: 0, LOADING: 1, ACTIVE: 2, FAILED: 3, DISPOSED: 4, UNLOADING: 5 } as const
export type FiberState = (typeof FiberState)[keyof typeof FiberState]

export type { DispatchMode, Disposable, Effect, EventOptions, Events, Plugin } from 'cordis'
export { directService, eventsOf } from './direct.js'
export type { Facts, JsonValue } from './errors.js'
export { closestName, deepFreeze, didYouMean, editDistance, freezeTree, HarnessError, toJsonSafe } from './errors.js'
export type { InvariantCheck, InvariantViolation } from './invariants.js'
export { InvariantsService } from './invariants.js'

/**
 * A context property naming the agent a composition belongs to (a preset's rows run under
 * `agent.ctx.extend({ [AGENT_SCOPE]: agentId })`): registries that have per-agent entries (tools,
 * prompt sections) put a registration made from such a context in that agent's scope by default.
 */
export const AGENT_SCOPE: unique symbol = Symbol.for('dsh.agentScope')

/** The agent a context's registrations belong to (see `AGENT_SCOPE`), if any. */
export function agentScopeOf(ctx: object): string | undefined {
  const value = (ctx as Record<symbol, unknown>)[AGENT_SCOPE]
  return typeof value === 'string' ? value : undefined
}
