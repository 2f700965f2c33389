import { describe, expect, it } from 'vitest'
import { Context, HarnessError, InvariantsService } from '../src/index.js'

describe('ctx.invariants', () => {
  it('runs registered checks and names the failing package', async () => {
    const root = new Context()
    await root.plugin(InvariantsService)
    let balance = 0
    const owner = root.plugin({
      name: 'ledger',
      inject: ['invariants'],
      apply(ctx) {
        ctx.invariants.register('@dsh/ledger', 'balance is never negative', () =>
          balance < 0 ? `balance is ${balance}` : undefined,
        )
      },
    })
    await owner
    expect(root.invariants.list()).toEqual(['@dsh/ledger/balance is never negative'])
    expect(root.invariants.run()).toEqual([])
    root.invariants.assert()

    balance = -3
    expect(root.invariants.run()).toEqual([
      { owner: '@dsh/ledger', name: 'balance is never negative', message: 'balance is -3' },
    ])
    let thrown: unknown
    try {
      root.invariants.assert()
    } catch (error) {
      thrown = error
    }
    expect(HarnessError.is(thrown, 'INVARIANT_VIOLATED')).toBe(true)
    expect((thrown as Error).message).toContain('@dsh/ledger: balance is never negative: balance is -3')

    // The check lives as long as the plugin that registered it.
    await owner.dispose()
    expect(root.invariants.list()).toEqual([])
  })

  it('counts a throwing check as a violation and refuses duplicates', async () => {
    const root = new Context()
    await root.plugin(InvariantsService)
    root.invariants.register('@dsh/x', 'explodes', () => {
      throw new Error('kaboom')
    })
    expect(root.invariants.run()).toEqual([{ owner: '@dsh/x', name: 'explodes', message: 'kaboom' }])
    expect(() => root.invariants.register('@dsh/x', 'explodes', () => undefined)).toThrow(/already registered/)
  })
})
