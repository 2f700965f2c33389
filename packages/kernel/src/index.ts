// @dsh/kernel: the Cordis kernel as dsh plugins see it, plus the harness-wide error class and the
// invariants registry. Plugins import Cordis through this package so the pinned kernel is shared.

export { Context, CordisError, Fiber, Inject, Service, ValidationError } from 'cordis'
/** Cordis fiber states (Cordis declares them as a const enum, which isolated modules cannot re-export). */
export const FiberState = { PENDING: 0, LOADING: 1, ACTIVE: 2, FAILED: 3, DISPOSED: 4, UNLOADING: 5 } as const
export type FiberState = (typeof FiberState)[keyof typeof FiberState]

export type { DispatchMode, Disposable, Effect, EventOptions, Events, Plugin } from 'cordis'
export type { Facts, JsonValue } from './errors.js'
export { deepFreeze, HarnessError, toJsonSafe } from './errors.js'
export type { InvariantCheck, InvariantViolation } from './invariants.js'
export { InvariantsService } from './invariants.js'
