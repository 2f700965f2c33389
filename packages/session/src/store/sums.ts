// The running sums a session list keeps per session (message count, cost per model) so `dsh
// sessions`, `/usage` and budgets read no logs: folded event by event as a store writes them, named
// as `sessionUsage` names models. Shared by the JSONL store (its meta sidecar) and the table stores
// (a `sums` column written in the write's transaction).
import type { SessionCost } from './index.js'
import { isConversationMessage } from './index.js'

/** What a table store keeps in its `sums` column. */
export type SessionSums = {
  messageCount: number
  cost: SessionCost
  /** `provider:model` of the last request header: the model the next answer's cost belongs to. */
  requestModel?: string
  /** A fork's seed length: the requests below it were the parent's. */
  seedLength?: number
}

export function emptySums(seedLength?: number): SessionSums {
  return {
    messageCount: 0,
    cost: { usd: 0, requests: 0, unknownRequests: 0, models: {} },
    ...(seedLength ? { seedLength } : {}),
  }
}

/** The sums of a `sums` column, or undefined (a row of an older schema keeps none; it is not counted). */
export function parseSums(text: string | null | undefined): SessionSums | undefined {
  if (!text) return undefined
  try {
    const value = JSON.parse(text) as SessionSums
    return typeof value?.messageCount === 'number' && typeof value.cost?.usd === 'number' ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * A paid request in one event, named as `sessionUsage` names it: an answer with usage (its own
 * provider:model, else the request header's) or a compaction's summary request.
 */
export function spendOf(
  event: { type: string; data: unknown },
  requestModel: string | undefined,
): { model: string; usd?: number } | undefined {
  const data = event.data as {
    message?: { usage?: unknown; provider?: unknown; model?: unknown }
    usage?: unknown
    model?: unknown
    cost?: { usd?: unknown }
  }
  const usd = typeof data.cost?.usd === 'number' && Number.isFinite(data.cost.usd) ? data.cost.usd : undefined
  if (event.type === 'assistant/message' && data.message?.usage) {
    const { provider, model } = data.message
    const name =
      typeof provider === 'string' && typeof model === 'string' ? `${provider}:${model}` : (requestModel ?? 'unknown')
    return { model: name, ...(usd !== undefined ? { usd } : {}) }
  }
  if (event.type === 'compaction/end' && data.usage)
    return { model: typeof data.model === 'string' ? data.model : 'unknown', ...(usd !== undefined ? { usd } : {}) }
  if (event.type === 'session/title' && data.usage) {
    const { provider } = data as { provider?: unknown }
    return {
      model: `${String(provider ?? 'unknown')}:${String(data.model ?? 'unknown')}`,
      ...(usd !== undefined ? { usd } : {}),
    }
  }
  return undefined
}

/** `provider:model` the next answer is priced under once `event` is written. */
export function requestModelAfter(
  event: { type: string; data: unknown },
  current: string | undefined,
): string | undefined {
  if (event.type !== 'request/header') return current
  const config = (event.data as { config?: { provider?: unknown; model?: unknown } }).config
  return `${String(config?.provider ?? 'unknown')}:${String(config?.model ?? 'unknown')}`
}

/** Adds what `event` cost (if it is a paid request) to `cost` and its model's share. */
export function addSpend(
  cost: SessionCost,
  event: { type: string; data: unknown },
  requestModel: string | undefined,
): void {
  const spent = spendOf(event, requestModel)
  if (!spent) return
  cost.models ??= {}
  const share = cost.models[spent.model] ?? { usd: 0, requests: 0, unknownRequests: 0 }
  cost.models[spent.model] = share
  for (const sum of [cost, share]) {
    sum.requests++
    if (spent.usd !== undefined) sum.usd = Math.round((sum.usd + spent.usd) * 1e9) / 1e9
    else sum.unknownRequests++
  }
}

/** Folds `events` into `sums` (a fork's seed events cost nothing here: the parent paid). */
export function addToSums(sums: SessionSums, events: readonly { seq: number; type: string; data: unknown }[]): void {
  for (const event of events) {
    if (isConversationMessage(event)) sums.messageCount++
    if (event.seq >= (sums.seedLength ?? 0)) addSpend(sums.cost, event, sums.requestModel)
    const next = requestModelAfter(event, sums.requestModel)
    if (next) sums.requestModel = next
  }
}
