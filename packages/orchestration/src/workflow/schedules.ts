// Schedules: `/schedule in 10m <prompt>`, `at <time> <prompt>`, `cron "<expr>" <prompt>` are durable
// facts in the session (`schedule/set`). A host that stays up (row config `fire: true`: the rpc and
// web bundles) arms them whenever the session has a live agent and fires each due time once: it logs
// `schedule/fired` and flushes before the prompt goes to the agent, so a crash can lose a firing but
// never repeat one. A one-shot that fell due while no host ran is reported (`schedule/missed`) and
// fired once, late; a cron schedule's missed times are reported and only the next one is armed.
// Without `fire` (headless) setting a schedule is refused with a message.
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import type { Agent } from '@dsh/agent'
import { type CommandContext, requireAgent, usageError } from '@dsh/interaction'
import { type Context, HarnessError } from '@dsh/kernel'
import type { AnySessionEvent, Session } from '@dsh/session'
import { splitArgs } from './words.js'

// croner loads with the first cron schedule, not with every session.
const require = createRequire(import.meta.url)
const cron = (spec: string) => new (require('croner') as typeof import('croner')).Cron(spec)

export type ScheduleKind = 'in' | 'at' | 'cron'

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A schedule: when (`dueAt`, ISO) it first falls due; `cron` repeats. */
    'schedule/set': { scheduleId: string; kind: ScheduleKind; spec: string; prompt: string; dueAt: string }
    /** Logged (and flushed) before the prompt is queued: a due time fires at most once. */
    'schedule/fired': { scheduleId: string; dueAt: string; firedAt: string; late?: true }
    /** Due times that passed while no host ran (a one-shot then fires late; cron skips them). */
    'schedule/missed': { scheduleId: string; dueAt: string; count: number }
    'schedule/cancelled': { scheduleId: string }
  }
}

interface Pending {
  scheduleId: string
  kind: ScheduleKind
  spec: string
  prompt: string
  /** The next due time not yet fired. */
  dueAt: string
}

const EVENTS = ['schedule/set', 'schedule/fired', 'schedule/missed', 'schedule/cancelled']
const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const MAX_TIMER = 2_147_483_647
const USAGE = 'in <N s|m|h|d> <prompt> | at <ISO time> <prompt> | cron "<expression>" <prompt> | list | cancel <id>'

function nextCron(spec: string, after: Date): Date | undefined {
  return cron(spec).nextRun(after) ?? undefined
}

/** The schedules of a log that still have a due time (set, not cancelled, one-shots not yet fired). */
export function pendingSchedules(events: readonly AnySessionEvent[]): Pending[] {
  const pending = new Map<string, Pending>()
  for (const event of events) {
    if (event.type === 'schedule/set') pending.set(event.data.scheduleId, { ...event.data })
    else if (event.type === 'schedule/cancelled') pending.delete(event.data.scheduleId)
    else if (event.type === 'schedule/fired') {
      const item = pending.get(event.data.scheduleId)
      if (!item) continue
      const next = item.kind === 'cron' ? nextCron(item.spec, new Date(event.data.firedAt)) : undefined
      if (next) item.dueAt = next.toISOString()
      else pending.delete(item.scheduleId)
    }
  }
  return [...pending.values()]
}

/** `in 10m ...` / `at <time> ...` / `cron "<expr>" ...` into a schedule. Throws `COMMAND_USAGE`. */
export function parseSchedule(args: string, now: Date): Omit<Pending, 'scheduleId'> {
  const [kind, spec, ...rest] = splitArgs(args)
  const prompt = rest.join(' ').trim()
  if (!spec || !prompt) throw usageError('schedule', USAGE, 'a time and a prompt are required')
  if (kind === 'in') {
    const match = /^(\d+)\s*([smhd])$/.exec(spec)
    if (!match) throw usageError('schedule', USAGE, `"${spec}" is not a delay like 30s, 10m, 2h or 1d`)
    const due = new Date(now.getTime() + Number(match[1]) * (UNITS[match[2] as string] as number))
    return { kind, spec, prompt, dueAt: due.toISOString() }
  }
  if (kind === 'at') {
    const due = new Date(spec)
    if (Number.isNaN(due.getTime()))
      throw usageError('schedule', USAGE, `"${spec}" is not a time like 2026-12-24T09:00`)
    if (due.getTime() <= now.getTime()) throw usageError('schedule', USAGE, `${due.toISOString()} is in the past`)
    return { kind, spec, prompt, dueAt: due.toISOString() }
  }
  if (kind === 'cron') {
    let due: Date | undefined
    try {
      due = nextCron(spec, now)
    } catch (error) {
      throw usageError('schedule', USAGE, `"${spec}" is not a cron expression: ${(error as Error).message}`)
    }
    if (!due) throw usageError('schedule', USAGE, `"${spec}" never falls due`)
    return { kind, spec, prompt, dueAt: due.toISOString() }
  }
  throw usageError('schedule', USAGE, `unknown schedule kind "${kind ?? ''}"`)
}

export interface SchedulesConfig {
  /** Whether this host fires schedules (it stays up): true for dsh rpc and dsh web, false for dsh run. */
  fire?: boolean
}

export default {
  name: 'schedules',
  inject: ['sessions', 'agents', 'commands'],
  apply(ctx: Context, config: SchedulesConfig = {}) {
    const fire = config?.fire === true
    ctx.sessions.defineEvent(...EVENTS)
    /** Armed timers by agent id, then schedule id. */
    const timers = new Map<string, Map<string, ReturnType<typeof setTimeout>>>()
    const eventsOf = (session: Session) =>
      session.events.slice(session.header.seedLength ?? 0) as readonly AnySessionEvent[]

    const disarm = (agentId: string, scheduleId?: string) => {
      const armed = timers.get(agentId)
      if (!armed) return
      for (const [id, timer] of armed) {
        if (scheduleId !== undefined && id !== scheduleId) continue
        clearTimeout(timer)
        armed.delete(id)
      }
      if (armed.size === 0) timers.delete(agentId)
    }

    const fireNow = async (agent: Agent, scheduleId: string, dueAt: string, late: boolean) => {
      disarm(agent.id, scheduleId)
      if (agent.disposed) return
      const current = pendingSchedules(eventsOf(agent.session)).find((item) => item.scheduleId === scheduleId)
      // Cancelled, or this due time was fired already (by this process or before a restart).
      if (!current || current.dueAt !== dueAt) return
      agent.session.append('schedule/fired', {
        scheduleId,
        dueAt,
        firedAt: new Date().toISOString(),
        ...(late ? { late: true as const } : {}),
      })
      await ctx.sessions.flush()
      if (agent.disposed) return
      agent.followup(`[scheduled ${scheduleId}${late ? ', fired late' : ''}] ${current.prompt}`)
      arm(agent, scheduleId)
    }

    const armOne = (agent: Agent, item: Pending) => {
      const wait = new Date(item.dueAt).getTime() - Date.now()
      const timer = setTimeout(
        () => (wait > MAX_TIMER ? armOne(agent, item) : void fireNow(agent, item.scheduleId, item.dueAt, false)),
        Math.max(0, Math.min(wait, MAX_TIMER)),
      )
      timer.unref?.()
      const armed = timers.get(agent.id) ?? new Map<string, ReturnType<typeof setTimeout>>()
      timers.set(agent.id, armed)
      armed.set(item.scheduleId, timer)
    }

    /** Arms the session's pending schedules (or one of them); due times already past are missed. */
    const arm = (agent: Agent, only?: string) => {
      if (!fire || agent.disposed) return
      for (const item of pendingSchedules(eventsOf(agent.session))) {
        if (only !== undefined && item.scheduleId !== only) continue
        disarm(agent.id, item.scheduleId)
        if (new Date(item.dueAt).getTime() > Date.now()) {
          armOne(agent, item)
          continue
        }
        if (item.kind !== 'cron') {
          agent.session.append('schedule/missed', { scheduleId: item.scheduleId, dueAt: item.dueAt, count: 1 })
          void fireNow(agent, item.scheduleId, item.dueAt, true)
          continue
        }
        // Cron: report the times that passed and arm the next one (recorded as a firing that was skipped).
        const now = new Date()
        const missed = cron(item.spec)
          .nextRuns(1000, new Date(new Date(item.dueAt).getTime() - 1))
          .filter((date) => date <= now)
        agent.session.append('schedule/missed', {
          scheduleId: item.scheduleId,
          dueAt: item.dueAt,
          count: missed.length,
        })
        agent.session.append('schedule/fired', {
          scheduleId: item.scheduleId,
          dueAt: item.dueAt,
          firedAt: now.toISOString(),
          late: true,
        })
        arm(agent, item.scheduleId)
      }
    }

    ctx.on('agent/created', (agent) => arm(agent))
    ctx.on('agent/disposed', (agent) => disarm(agent.id))
    ctx.effect(
      () => () => {
        for (const agentId of [...timers.keys()]) disarm(agentId)
      },
      'schedules.timers',
    )

    ctx.commands.register({
      name: 'schedule',
      description: 'Schedule a prompt for this session: in 10m, at a time, or on a cron expression; list or cancel',
      usage: USAGE,
      run(args, context: CommandContext) {
        const agent = requireAgent(context)
        const verb = args.split(/\s+/)[0] ?? ''
        if (verb === '' || verb === 'list') {
          const pending = pendingSchedules(eventsOf(agent.session))
          return pending.length === 0
            ? 'no pending schedules'
            : pending
                .map((item) => `${item.scheduleId} ${item.kind} ${item.spec} next ${item.dueAt}: ${item.prompt}`)
                .join('\n')
        }
        if (verb === 'cancel') {
          const id = args.slice(verb.length).trim()
          if (!pendingSchedules(eventsOf(agent.session)).some((item) => item.scheduleId === id)) {
            throw new HarnessError('SCHEDULE_UNKNOWN', `no pending schedule ${id}; /schedule list shows them`, { id })
          }
          agent.session.append('schedule/cancelled', { scheduleId: id })
          disarm(agent.id, id)
          return `${id} cancelled`
        }
        if (!fire) {
          throw new HarnessError(
            'SCHEDULE_UNAVAILABLE',
            'this surface does not stay up to fire schedules (dsh run ends with its task); set them from dsh rpc or dsh web',
            {},
          )
        }
        const parsed = parseSchedule(args, new Date())
        const scheduleId = `sched-${randomUUID().slice(0, 8)}`
        agent.session.append('schedule/set', { scheduleId, ...parsed })
        arm(agent, scheduleId)
        return { text: `${scheduleId} set: next ${parsed.dueAt}`, data: { scheduleId, dueAt: parsed.dueAt } }
      },
    })
  },
}
