// @dsh/context/retry: the recovery plugin. On `agent/request-error` it retries transient failures
// (RATE_LIMIT, PROVIDER_UNAVAILABLE, NETWORK, TIMEOUT by default) a bounded number of times per step, with
// exponential backoff, jitter and a cap, honouring the provider's Retry-After. Every retry is a durable
// `recovery/retry` event in the open step, appended before the wait; giving up is `recovery/give-up`.
// It never changes provider or model: the retried request is rebuilt by the loop from the same config.
// Both events are `ignorable`, so a log written with this row still loads where the row is disabled.
import type { RequestErrorDecision, RequestFailure } from '@dsh/agent'
import { type Context, HarnessError } from '@dsh/kernel'
import type { AnySessionEvent, Session } from '@dsh/session'
import { RECOVERY_EVENTS, type RecoveryRetry } from './index.js'

export const name = 'context-retry'
export const inject = ['sessions']

export interface RetryConfig {
  /** Retries per step (the first request is not counted). Default 4. */
  maxAttempts?: number
  /** Backoff of the first retry, milliseconds; doubles per retry. Default 1000. */
  baseDelayMs?: number
  /** Cap of the computed backoff, milliseconds. Default 30000. */
  maxDelayMs?: number
  /** A Retry-After longer than this gives up instead of waiting. Default 120000. */
  maxRetryAfterMs?: number
  /** Share of the backoff that is randomised away (0 = none, 1 = full jitter). Default 0.5. */
  jitter?: number
  /** Error codes retried. Default RATE_LIMIT, PROVIDER_UNAVAILABLE, NETWORK, TIMEOUT. */
  codes?: string[]
  /** In-process only (tests): the random source in [0, 1). */
  random?: () => number
  /** In-process only (tests): the wait. Must settle promptly when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
}

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

function resolve(config: RetryConfig = {}) {
  const c = config ?? {}
  const resolved = {
    maxAttempts: c.maxAttempts ?? 4,
    baseDelayMs: c.baseDelayMs ?? 1000,
    maxDelayMs: c.maxDelayMs ?? 30_000,
    maxRetryAfterMs: c.maxRetryAfterMs ?? 120_000,
    jitter: c.jitter ?? 0.5,
    codes: new Set(c.codes ?? ['RATE_LIMIT', 'PROVIDER_UNAVAILABLE', 'NETWORK', 'TIMEOUT']),
    random: c.random ?? Math.random,
    sleep: c.sleep ?? abortableSleep,
  }
  const problems: string[] = []
  for (const key of ['maxAttempts', 'baseDelayMs', 'maxDelayMs', 'maxRetryAfterMs'] as const) {
    if (!Number.isInteger(resolved[key]) || resolved[key] < 0) problems.push(`${key} must be an integer >= 0`)
  }
  if (typeof resolved.jitter !== 'number' || resolved.jitter < 0 || resolved.jitter > 1)
    problems.push('jitter must be in [0, 1]')
  if (problems.length > 0)
    throw new HarnessError('INVALID_CONTEXT_CONFIG', `context-retry: ${problems.join('; ')}`, { problems })
  return resolved
}

/** `recovery/retry` events since the open step started: the retries already spent on this request. */
export function retriesThisStep(session: Session): number {
  let count = 0
  const events = session.events
  for (let seq = events.length - 1; seq >= 0; seq--) {
    const event = events[seq] as AnySessionEvent
    if (event.type === 'step/start') break
    if (event.type === 'recovery/retry') count++
  }
  return count
}

export function apply(ctx: Context, config: RetryConfig = {}): void {
  const options = resolve(config)
  ctx.sessions.defineEvent(...RECOVERY_EVENTS)
  ctx.on('agent/request-error', async (failure: RequestFailure, next: () => Promise<RequestErrorDecision>) => {
    const { error, session, signal } = failure
    if (signal.aborted || !options.codes.has(error.code)) return next()
    const spent = retriesThisStep(session)
    const giveUp = (reason: string) => {
      session.append('recovery/give-up', { code: error.code, attempts: spent, reason }, { ignorable: true })
      return next()
    }
    if (spent >= options.maxAttempts) return giveUp(`${spent} retries did not help`)
    if (error.retryAfterMs !== undefined && error.retryAfterMs > options.maxRetryAfterMs) {
      return giveUp(`the provider asked to wait ${error.retryAfterMs} ms, more than maxRetryAfterMs`)
    }
    const attempt = spent + 1
    const backoff = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1))
    const jittered = Math.round(backoff * (1 - options.jitter * options.random()))
    const delayMs = error.retryAfterMs ?? jittered
    const fact: RecoveryRetry = {
      attempt,
      maxAttempts: options.maxAttempts,
      code: error.code,
      delayMs,
      message: error.message,
    }
    if (error.status !== undefined) fact.status = error.status
    if (error.retryAfterMs !== undefined) fact.retryAfterMs = error.retryAfterMs
    session.append('recovery/retry', fact, { ignorable: true })
    await options.sleep(delayMs, signal)
    return signal.aborted ? { retry: false } : { retry: true }
  })
}

export default { name, inject, apply }
