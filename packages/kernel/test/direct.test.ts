import { describe, expect, it } from 'vitest'
import { Context, directService, Service } from '../src/index.js'

declare module 'cordis' {
  interface Context {
    counter: Counter
  }
}

class Counter extends Service {
  static readonly provide = 'counter'
  constructor(
    ctx: Context,
    readonly config: { label: string },
  ) {
    super(ctx, 'counter')
  }
  label(): string {
    return this.config.label
  }
}

describe('directService', () => {
  it("returns the provider's own object, and follows the provider through unload and swap", async () => {
    const root = new Context()
    let read: (() => Counter | undefined) | undefined
    await root.plugin({
      name: 'consumer',
      apply(ctx: Context) {
        read = directService(ctx, 'counter')
      },
    })
    const direct = read as () => Counter | undefined
    expect(direct()).toBeUndefined()

    const first = root.plugin(Counter, { label: 'first' })
    await first
    const got = direct()
    expect(got?.label()).toBe('first')
    expect(got).toBeInstanceOf(Counter)
    // Not a tracing proxy: the same object on every call, and methods are its own functions.
    expect(direct()).toBe(got)
    expect(got?.label).toBe(Counter.prototype.label)

    await first.dispose()
    expect(direct()).toBeUndefined()

    await root.plugin(Counter, { label: 'second' })
    expect(direct()?.label()).toBe('second')
  })
})
