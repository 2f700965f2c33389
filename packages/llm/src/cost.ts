// What one model request cost: the provider's reported usage priced with the model's catalog prices
// (US dollars per million tokens). A price that is not known gives no figure at all, never zero.
import type { ModelInfo } from './adapter.js'
import type { Usage } from './messages.js'

/** Prices in US dollars per million tokens. `cacheRead` absent: cache hits are billed as input. */
export type ModelPrices = NonNullable<ModelInfo['cost']>

/** The cost logged with an `assistant/message` that carries usage. `usd` absent: the price is unknown. */
export interface RequestCost {
  usd?: number
  /** The prices `usd` was computed with. */
  prices?: ModelPrices
}

function valid(value: number | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

/**
 * The cost of one request: uncached input at `input`, cache hits at `cacheRead` (or `input` when the
 * catalog names no cache price), cache writes at `cacheWrite` (or `input`), output (reasoning
 * included, as providers count it) at `output`. Unknown or invalid prices: `{}` (unknown).
 */
export function requestCost(usage: Usage, prices: ModelPrices | undefined): RequestCost {
  if (!prices || !valid(prices.input) || !valid(prices.output)) return {}
  const hit = usage.cacheHitTokens ?? 0
  const write = usage.cacheWriteTokens ?? 0
  const uncached = Math.max(0, usage.inputTokens - hit - write)
  const cacheRead = valid(prices.cacheRead) ? prices.cacheRead : prices.input
  const cacheWrite = valid(prices.cacheWrite) ? prices.cacheWrite : prices.input
  const usd =
    (uncached * prices.input + hit * cacheRead + write * cacheWrite + usage.outputTokens * prices.output) / 1e6
  return { usd: Math.round(usd * 1e9) / 1e9, prices: { ...prices } }
}

/** A dollar figure for people: `$0.0123`, `$1.24`; `unknown` when absent. */
export function formatUsd(usd: number | undefined): string {
  if (usd === undefined) return 'unknown'
  if (usd === 0) return '$0.00'
  if (usd < 0.01) return `$${Number(usd.toPrecision(2))}`
  return `$${usd.toFixed(2)}`
}
