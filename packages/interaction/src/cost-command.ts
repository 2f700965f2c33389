// /cost: what this session has used, folded from its own log (so it is the same after resume, fork
// and compaction): per model the requests, tokens by kind, cost and cache-hit share, then the time
// spent waiting on the model and on tools. A model without a known price shows `unknown`, never $0.
import type { Context } from '@dsh/kernel'
import { type ModelUsage, sessionUsage, usageCostText } from '@dsh/session'
import { type CommandContext, requireSession } from './commands.js'

function seconds(ms: number): string {
  return ms < 60_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`
}

function modelLine(row: ModelUsage): string {
  const share = row.inputTokens > 0 ? Math.round((row.cacheHitTokens / row.inputTokens) * 100) : 0
  const parts = [
    `${row.requests} request${row.requests === 1 ? '' : 's'}`,
    `${row.inputTokens} in (${row.cacheHitTokens} cached, ${share}% cache hits${row.cacheWriteTokens ? `, ${row.cacheWriteTokens} written to cache` : ''})`,
    `${row.outputTokens} out${row.reasoningTokens ? ` (${row.reasoningTokens} reasoning)` : ''}`,
    usageCostText(row),
  ]
  return `${row.model}: ${parts.join(', ')}`
}

export function registerCostCommand(ctx: Context): void {
  ctx.commands.register({
    name: 'cost',
    description: "This session's tokens and cost per model, cache hits, and time waiting on the model and tools",
    run(_args, context: CommandContext) {
      const session = requireSession(context)
      const usage = sessionUsage(session.events, session.header.seedLength ?? 0)
      const lines =
        usage.models.length === 0 ? ['no model requests with reported usage yet'] : usage.models.map(modelLine)
      if (usage.models.length > 1) lines.push(`total: ${usageCostText(usage)}`)
      if (usage.unknownRequests > 0) {
        lines.push(
          'unknown: no price for that model (for an OpenAI-compatible endpoint: dsh config set endpoints.NAME.prices \'{"input": 2, "output": 8}\', US dollars per million tokens)',
        )
      }
      lines.push(`waiting on the model ${seconds(usage.modelMs)}, on tools ${seconds(usage.toolMs)}`)
      if (usage.inheritedRequests > 0) {
        lines.push(`(${usage.inheritedRequests} requests copied from the parent session are not counted)`)
      }
      return { text: lines.join('\n'), data: { ...usage, cost: usageCostText(usage) } }
    },
  })
}
