// The `budget.day` setting: what every session spent today, across the store, may not pass a figure
// in US dollars. Checked where the session budget is (before a turn's next model request, never inside
// a tool step). Today's spend is the store's running sums of the other sessions updated since local
// midnight (as `/usage` counts them: a session counts on the day of its last update), re-read at most
// every 30 s, plus this session's requests logged since midnight, read from its log at each check. A
// session a store keeps no sums for (written before a SQLite or PostgreSQL store's schema 2) counts
// only while it is the live one.
import type { Context } from '@dsh/kernel'
import { type Session, sessionUsage, usageCostText } from '@dsh/session'
import type {} from '@dsh/session/store'
import type {} from '@dsh/settings'

declare module '@dsh/settings' {
  interface SettingsMap {
    /** A cost budget per day in US dollars across every session in the store; 0: none. */
    'budget.day': number
  }
}

const REREAD_MS = 30_000

export class DailyBudget {
  private others: { day: number; at: number; usd: Map<string, number> } | undefined

  constructor(
    private readonly ctx: Context,
    private readonly now: () => number = Date.now,
  ) {
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('budget.day', {
        schema: { type: 'number', minimum: 0 },
        default: 0,
        description:
          'cost budget per day in US dollars across every session in the store: a turn stops before the model request past it (0: no budget)',
      })
    })
  }

  /** The `budget.day` setting, when set above zero. */
  limit(): number | undefined {
    const settings = this.ctx.get('settings')
    const value = settings?.has('budget.day') ? settings.get('budget.day') : undefined
    return typeof value === 'number' && value > 0 ? value : undefined
  }

  /** Why `session` may not send another request today, or undefined when it may. */
  async refusal(session: Session): Promise<string | undefined> {
    const limit = this.limit()
    if (limit === undefined) return undefined
    const day = new Date(this.now()).setHours(0, 0, 0, 0)
    const today = session.events.filter((event) => event.time >= day)
    const own = sessionUsage(today, session.header.seedLength ?? 0)
    let others = 0
    for (const [id, usd] of await this.othersToday(day)) if (id !== session.id) others += usd
    const spent = { ...own, usd: Math.round((own.usd + others) * 1e9) / 1e9 }
    if (spent.usd < limit) return undefined
    return `today's spending reached the daily budget: ${usageCostText(spent)} spent of $${limit} across sessions (raise the budget.day setting, or go on tomorrow)`
  }

  private async othersToday(day: number): Promise<Map<string, number>> {
    if (this.others && this.others.day === day && this.now() - this.others.at < REREAD_MS) return this.others.usd
    const usd = new Map<string, number>()
    const store = this.ctx.get('sessionStore')
    for (const summary of store ? await store.summaries().catch(() => []) : []) {
      if (summary.updatedAt >= day && summary.cost) usd.set(summary.id, summary.cost.usd)
    }
    this.others = { day, at: this.now(), usd }
    return usd
  }
}
