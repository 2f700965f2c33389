// A session's usage and cost, folded from its own log: every `assistant/message` that carries usage
// (and the cost logged with it), a compaction's summary request and the title request, per model, plus the time spent waiting on the model (request header
// to response) and on tools (call to result). Events a fork copied from its parent (seq below the
// header's `seedLength`) were paid for by the parent and are left out. Takes raw records, so stored
// logs can be summed without validating them.

/** One model's share of a session. `usd` is absent when some request of it had no known price. */
// Type aliases, not interfaces: they are JSON values (command data, CLI output).
export type ModelUsage = {
  /** `provider:model`. */
  model: string
  requests: number
  inputTokens: number
  outputTokens: number
  cacheHitTokens: number
  cacheWriteTokens: number
  reasoningTokens: number
  /** Sum of the known costs; `unknownRequests` counts requests whose price was not known. */
  usd: number
  unknownRequests: number
}

export type SessionUsage = {
  models: ModelUsage[]
  /** Total cost of requests with a known price. */
  usd: number
  /** Requests whose price was not known (their cost is not in `usd`). */
  unknownRequests: number
  requests: number
  /** Milliseconds between each request header and its response. */
  modelMs: number
  /** Milliseconds between each tool call and its result. */
  toolMs: number
  /** Requests copied from the parent session and not counted. */
  inheritedRequests: number
}

type Raw = Record<string, unknown>

function isRaw(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0
}

/** Folds a log's events (raw records in seq order). `seedLength`: the header's, when forked. */
export function sessionUsage(events: readonly unknown[], seedLength = 0): SessionUsage {
  const models = new Map<string, ModelUsage>()
  const out: SessionUsage = {
    models: [],
    usd: 0,
    unknownRequests: 0,
    requests: 0,
    modelMs: 0,
    toolMs: 0,
    inheritedRequests: 0,
  }
  const add = (name: string, usage: Raw, cost: unknown) => {
    let row = models.get(name)
    if (!row) {
      row = {
        model: name,
        requests: 0,
        inputTokens: 0,
        outputTokens: 0,
        cacheHitTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
        usd: 0,
        unknownRequests: 0,
      }
      models.set(name, row)
    }
    row.requests++
    row.inputTokens += count(usage.inputTokens)
    row.outputTokens += count(usage.outputTokens)
    row.cacheHitTokens += count(usage.cacheHitTokens)
    row.cacheWriteTokens += count(usage.cacheWriteTokens)
    row.reasoningTokens += count(usage.reasoningTokens)
    const usd = isRaw(cost) ? cost.usd : undefined
    if (typeof usd === 'number' && Number.isFinite(usd)) row.usd += usd
    else row.unknownRequests++
  }
  let requestAt: number | undefined
  let requestModel: string | undefined
  const calls = new Map<string, number>()
  for (const event of events) {
    if (!isRaw(event) || !isRaw(event.data)) continue
    const seq = count(event.seq)
    const time = count(event.time)
    const data = event.data
    if (event.type === 'request/header') {
      requestAt = time
      const config = isRaw(data.config) ? data.config : {}
      requestModel = `${String(config.provider ?? 'unknown')}:${String(config.model ?? 'unknown')}`
      continue
    }
    if (seq < seedLength) {
      if (event.type === 'assistant/message' && isRaw(data.message) && isRaw(data.message.usage))
        out.inheritedRequests++
      continue
    }
    if (event.type === 'tool/call' && isRaw(data.call) && typeof data.call.id === 'string') {
      calls.set(data.call.id, time)
    } else if (event.type === 'tool/result' && isRaw(data.message)) {
      const started = calls.get(String(data.message.toolCallId))
      if (started !== undefined) out.toolMs += Math.max(0, time - started)
      calls.delete(String(data.message.toolCallId))
    } else if (event.type === 'assistant/message' && isRaw(data.message)) {
      if (requestAt !== undefined) out.modelMs += Math.max(0, time - requestAt)
      requestAt = undefined
      const message = data.message
      if (!isRaw(message.usage)) continue
      const name =
        typeof message.provider === 'string' && typeof message.model === 'string'
          ? `${message.provider}:${message.model}`
          : (requestModel ?? 'unknown')
      add(name, message.usage, data.cost)
    } else if (event.type === 'compaction/end' && isRaw(data.usage)) {
      // The summary request of a compaction: paid for like any other.
      add(typeof data.model === 'string' ? data.model : 'unknown', data.usage, data.cost)
    } else if (event.type === 'session/title' && isRaw(data.usage)) {
      // The request that named the session.
      add(`${String(data.provider ?? 'unknown')}:${String(data.model ?? 'unknown')}`, data.usage, data.cost)
    }
  }
  for (const row of models.values()) {
    row.usd = Math.round(row.usd * 1e9) / 1e9
    out.models.push(row)
    out.requests += row.requests
    out.usd += row.usd
    out.unknownRequests += row.unknownRequests
  }
  out.usd = Math.round(out.usd * 1e9) / 1e9
  return out
}

/** The session's cost for people: `$0.42`, `unknown` when no request had a price, `$0.42 + unknown` when some had none. */
export function usageCostText(usage: Pick<SessionUsage, 'usd' | 'unknownRequests' | 'requests'>): string {
  const known = usage.requests - usage.unknownRequests
  if (usage.requests === 0) return '$0.00'
  if (known === 0) return 'unknown'
  const figure = usdText(usage.usd)
  return usage.unknownRequests > 0 ? `${figure} + unknown` : figure
}

function usdText(usd: number): string {
  if (usd === 0) return '$0.00'
  if (usd < 0.01) return `$${Number(usd.toPrecision(2))}`
  return `$${usd.toFixed(2)}`
}
