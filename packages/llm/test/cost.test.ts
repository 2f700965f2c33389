// requestCost: the price arithmetic, checked against hand computations.
import { describe, expect, it } from 'vitest'
import { formatUsd, requestCost } from '../src/index.js'

describe('requestCost', () => {
  it('prices uncached input, cache hits, cache writes and output separately', () => {
    const usage = {
      inputTokens: 10_000,
      outputTokens: 2_000,
      totalTokens: 12_000,
      cacheHitTokens: 6_000,
      cacheWriteTokens: 1_000,
    }
    const prices = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }
    // 3,000 x $3 + 6,000 x $0.30 + 1,000 x $3.75 + 2,000 x $15 = 9,000 + 1,800 + 3,750 + 30,000 (per M)
    expect(requestCost(usage, prices)).toEqual({ usd: 0.04455, prices })
  })

  it('bills cache hits as input when the catalog names no cache price', () => {
    const usage = { inputTokens: 1_000, outputTokens: 0, totalTokens: 1_000, cacheHitTokens: 500 }
    expect(requestCost(usage, { input: 2, output: 8 }).usd).toBeCloseTo(0.002, 12)
  })

  it('an unknown price gives no figure, never zero', () => {
    const usage = { inputTokens: 1_000, outputTokens: 10, totalTokens: 1_010 }
    expect(requestCost(usage, undefined)).toEqual({})
    expect(formatUsd(undefined)).toBe('unknown')
    expect(formatUsd(0.0042)).toBe('$0.0042')
    expect(formatUsd(1.234)).toBe('$1.23')
  })
})
