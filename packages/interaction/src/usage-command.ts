// /usage: the cost of the sessions in the store (today, the last 7 days, per model, per workspace), from the
// store's summaries (a running sum per session, no log read for the JSONL store). A session counts in
// the day of its last update. Stores that keep no cost (SQLite, PostgreSQL) show what they can: none.
import type { Context } from '@dsh/kernel'
import { usageCostText } from '@dsh/session'
import type { SessionCost, SessionSummary } from '@dsh/session/store'

interface StoreLike {
  summaries(): Promise<SessionSummary[]>
}

const DAY = 24 * 60 * 60 * 1000

function add(total: SessionCost, cost: SessionCost): void {
  total.usd = Math.round((total.usd + cost.usd) * 1e9) / 1e9
  total.requests += cost.requests
  total.unknownRequests += cost.unknownRequests
  for (const [model, share] of Object.entries(cost.models ?? {})) {
    total.models ??= {}
    const sum = total.models[model] ?? empty()
    total.models[model] = sum
    sum.usd = Math.round((sum.usd + share.usd) * 1e9) / 1e9
    sum.requests += share.requests
    sum.unknownRequests += share.unknownRequests
  }
}

/** The per-model lines under a period, most expensive first. */
function modelLines(cost: SessionCost): string[] {
  return Object.entries(cost.models ?? {})
    .sort((a, b) => b[1].usd - a[1].usd || b[1].requests - a[1].requests)
    .map(([model, share]) => `    ${model}: ${usageCostText(share)} (${requests(share)})`)
}

function requests(cost: SessionCost): string {
  return `${cost.requests} request${cost.requests === 1 ? '' : 's'}`
}

function empty(): SessionCost {
  return { usd: 0, requests: 0, unknownRequests: 0 }
}

export function registerUsageCommand(ctx: Context, now: () => number = Date.now): void {
  ctx.commands.register({
    name: 'usage',
    description: 'Cost across stored sessions: today, the last 7 days, per model and per workspace',
    async run() {
      const store = (ctx.get as (name: string) => unknown)('sessionStore') as StoreLike | undefined
      if (!store) return { text: 'no session store is active: nothing is kept across sessions', data: null }
      const summaries = await store.summaries()
      const startOfDay = new Date(now()).setHours(0, 0, 0, 0)
      const today = empty()
      const week = empty()
      const workspaces = new Map<string, SessionCost>()
      let uncounted = 0
      for (const summary of summaries) {
        if (!summary.cost) {
          if (!summary.error) uncounted++
          continue
        }
        if (summary.updatedAt >= startOfDay) add(today, summary.cost)
        if (summary.updatedAt >= now() - 7 * DAY) {
          add(week, summary.cost)
          const row = workspaces.get(summary.cwd) ?? empty()
          add(row, summary.cost)
          workspaces.set(summary.cwd, row)
        }
      }
      const lines = [
        `today: ${usageCostText(today)} (${requests(today)})`,
        ...modelLines(today),
        `last 7 days: ${usageCostText(week)} (${requests(week)})`,
        ...modelLines(week),
      ]
      if (workspaces.size > 0) lines.push('per workspace, last 7 days:')
      for (const [cwd, cost] of [...workspaces].sort((a, b) => b[1].usd - a[1].usd)) {
        lines.push(`  ${cwd}: ${usageCostText(cost)}`)
      }
      if (uncounted > 0) lines.push(`(${uncounted} sessions written before the store kept costs are not counted)`)
      const data = {
        today,
        week,
        workspaces: Object.fromEntries(workspaces),
        uncounted,
      }
      return { text: lines.join('\n'), data }
    },
  })
}
