// Direct service readers for hot paths (decision 351).
import { type Context, symbols } from 'cordis'

/**
 * A reader of service `name` as `ctx` sees it that returns the provider's own object. Cordis hands out a
 * tracing proxy on every `ctx.x` or `ctx.get(x)` and a caller-bound copy of the context on every method
 * call through it (a few microseconds each, dozens of times per model request); the provider's own
 * object costs nothing. The reader follows provider changes: a provider that comes, goes or is swapped by
 * a live config edit is looked up again on the next call. Use it for calls that register nothing
 * (`get`, `resolve`, reading state); a registering method (`define`, `register`, `on`...) called through
 * it would tie its registration to the provider's lifetime instead of the caller's.
 */
export function directService<K extends keyof Context & string>(
  ctx: Context,
  name: K,
): () => NonNullable<Context[K]> | undefined {
  let value: NonNullable<Context[K]> | undefined
  let fresh = false
  ;(ctx as unknown as { on(name: string, listener: (changed: string) => void): void }).on(
    'internal/service',
    (changed) => {
      if (changed === name) fresh = false
    },
  )
  return () => {
    if (!fresh) {
      const traced = ctx.get(name) as (NonNullable<Context[K]> & Record<symbol, unknown>) | undefined
      value = (traced?.[symbols.original] as NonNullable<Context[K]> | undefined) ?? traced
      fresh = true
    }
    return value
  }
}

/**
 * The event bus of `ctx` without the tracing proxy `ctx.emit` / `ctx.waterfall` go through on every
 * call. Listeners see the same call: events named by a string carry no caller context either way.
 */
export function eventsOf(ctx: Context): Context['events'] {
  const traced = ctx.events as Context['events'] & Record<symbol, unknown>
  return (traced[symbols.original] as Context['events'] | undefined) ?? traced
}
