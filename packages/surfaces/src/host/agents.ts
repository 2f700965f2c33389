// Every agent running on this machine or the shared store, for `dsh agents`, `/agents` and the web's
// agents panel: sessions with a live lease (the chat, `dsh run`, the web and rpc hosts, their
// subagents and workflow children; PostgreSQL leases name other hosts) and the background runs with
// how they ended. State, model, cost and last activity come from each session's durable log.
import { existsSync, readdirSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { launcherHome } from '@dsh/composition/launcher'
import { type Context, HarnessError } from '@dsh/kernel'
import {
  ownerAlive,
  readLease,
  type SessionStore,
  type SessionSummary,
  titleOf,
  writtenTitleOf,
} from '@dsh/session/store'
import type {} from '@dsh/session/store/query'
import type {} from '@dsh/world/worktrees'
import { attachSocketPath } from '../rpc/attach-path.js'
import { sessionActivity } from './activity.js'
import { type BackgroundRecord, backgroundDir, readBackgroundRecords } from './background-records.js'
import { alignColumns } from './columns.js'

export type AgentKind = 'foreground' | 'background' | 'child'
export type AgentStateName =
  | 'running'
  | 'waiting for approval'
  | 'waiting for input'
  | 'done'
  | 'failed'
  | 'interrupted'

export interface AgentRow {
  sessionId: string
  kind: AgentKind
  state: AgentStateName
  /** Why it failed, or what it waits on. */
  detail?: string
  cwd: string
  /** The dsh worktree branch it works on, if any. */
  branch?: string
  model?: string
  cost: string
  lastActivity?: number
  pid?: number
  host?: string
  parentSession?: string
  title?: string
  /** The approval it waits on, when it does. */
  approval?: { requestId: string; summary: string; toolName?: string }
  /** Whether its process serves an attach socket (`dsh attach`, `agents/respond`): a background run. */
  attachable?: boolean
}

/** A session's title from its log, as the session list gives it: the last one written, else the first prompt's. */
function titleIn(events: readonly unknown[]): string | undefined {
  let written: string | undefined
  for (const event of events) written = writtenTitleOf(event) ?? written
  return written ?? events.map(titleOf).find((title) => title !== undefined)
}

/** Sessions whose lease file has a live owner (lock-file stores), by id. */
function liveLocks(store: SessionStore): Map<string, { pid: number; host: string }> {
  const out = new Map<string, { pid: number; host: string }>()
  let names: string[] = []
  try {
    names = readdirSync(store.leaseDir).filter((name) => name.endsWith('.lock'))
  } catch {}
  for (const name of names) {
    const owner = readLease(join(store.leaseDir, name))
    if (owner && ownerAlive(owner)) out.set(name.slice(0, -'.lock'.length), { pid: owner.pid, host: owner.host })
  }
  return out
}

/**
 * Whether another process holds session `id` live: its lock file's owner runs, or, in a store that
 * keeps leases itself (PostgreSQL), its holder is live.
 */
export async function heldElsewhere(ctx: Context, id: string): Promise<boolean> {
  const store = ctx.get('sessionStore')
  if (!store) return false
  if (!store.lease) {
    const owner = readLease(join(store.leaseDir, `${id}.lock`))
    return Boolean(owner && ownerAlive(owner))
  }
  const summaries = (await ctx.get('sessionQuery')?.list()) ?? []
  return summaries.some((summary) => summary.id === id && summary.holder?.live === true)
}

/** How a background run whose process is gone ended: done, failed (with why), or interrupted (resumable). */
function endedState(record: BackgroundRecord): { state: AgentStateName; detail?: string } {
  if (record.endedAt !== undefined)
    return record.reason === 'completed'
      ? { state: 'done' }
      : { state: 'failed', detail: `${record.reason ?? 'error'} (exit ${record.exitCode ?? '?'})` }
  return {
    state: 'interrupted',
    detail: `its process ended; resume it: dsh run --resume ${record.sessionId} "Continue."`,
  }
}

/**
 * Every session running on this machine or the shared store, and the background runs of `home`, with
 * their state. Reads leases, the background records, the worktree records and each session's log.
 */
export async function listAgents(ctx: Context, options: { home?: string } = {}): Promise<AgentRow[]> {
  const home = options.home ?? launcherHome(ctx)
  const store = ctx.get('sessionStore')
  const query = ctx.get('sessionQuery')
  if (!store)
    throw new HarnessError('CONFIG_NO_PERSISTENCE', 'the profile has no session store row; agents cannot be listed', {})
  if (!query)
    throw new HarnessError('CONFIG_NO_QUERY', 'the profile has no session-query row; enable it to list agents', {})
  const leased = liveLocks(store)
  // Stores that keep leases themselves (PostgreSQL shared by many hosts) say who holds each in their
  // list; lock-file stores need no list (the web page asks every few seconds, the logs say the rest).
  const summaries: SessionSummary[] = store.lease ? await query.list() : []
  const byId = new Map(summaries.map((summary) => [summary.id, summary]))
  for (const summary of summaries)
    if (summary.holder?.live) leased.set(summary.id, { pid: summary.holder.pid, host: summary.holder.host })
  const background = new Map(readBackgroundRecords(backgroundDir(home)).map((record) => [record.sessionId, record]))
  const ids = [...new Set([...leased.keys(), ...background.keys()])]
  const worktrees =
    (await ctx
      .get('worktrees')
      ?.list()
      .catch(() => undefined)) ?? []
  const rows: AgentRow[] = []
  for (const id of ids) {
    const summary = byId.get(id)
    const log = await query.read(id).catch(() => undefined)
    const owner = leased.get(id)
    const record = background.get(id)
    const activity = log ? sessionActivity(log.events, log.header.seedLength ?? 0) : undefined
    const cwd = log?.header.cwd ?? summary?.cwd ?? record?.cwd ?? '?'
    let state: AgentStateName
    let detail: string | undefined
    if (owner || (record && record.endedAt === undefined && ownerAlive(record))) {
      const phase = activity?.phase ?? 'running'
      state =
        phase === 'approval'
          ? 'waiting for approval'
          : phase === 'question' || phase === 'idle'
            ? 'waiting for input'
            : 'running'
      // A background run between its turns is still running (nobody types into it).
      if (record && phase === 'idle') state = 'running'
      detail = activity?.waitingOn
    } else if (record) {
      ;({ state, detail } = endedState(record))
    } else continue
    const parentSession = log?.header.parentSession ?? summary?.parentSession
    const branch = worktrees.find((view) => cwd === view.path || cwd.startsWith(`${view.path}/`))?.branch
    const title = summary?.title ?? (log ? titleIn(log.events) : undefined)
    const pid = owner?.pid ?? record?.pid
    const host = owner?.host ?? record?.host
    rows.push({
      sessionId: id,
      kind: record ? 'background' : parentSession ? 'child' : 'foreground',
      state,
      ...(detail ? { detail } : {}),
      cwd,
      ...(branch ? { branch } : {}),
      ...(activity?.model ? { model: activity.model } : {}),
      cost: activity?.cost ?? '?',
      ...(activity?.lastActivity !== undefined ? { lastActivity: activity.lastActivity } : {}),
      ...(pid !== undefined ? { pid } : {}),
      ...(host ? { host } : {}),
      ...(parentSession ? { parentSession } : {}),
      ...(title ? { title } : {}),
      ...(state === 'waiting for approval' && activity?.approval ? { approval: activity.approval } : {}),
      ...(existsSync(attachSocketPath(home, id)) && (state === 'running' || state.startsWith('waiting'))
        ? { attachable: true }
        : {}),
    })
  }
  const order: Record<AgentStateName, number> = {
    'waiting for approval': 0,
    'waiting for input': 1,
    running: 2,
    interrupted: 3,
    failed: 4,
    done: 5,
  }
  return rows.sort((a, b) => order[a.state] - order[b.state] || (b.lastActivity ?? 0) - (a.lastActivity ?? 0))
}

function ago(ms: number | undefined, now: number): string {
  if (ms === undefined) return '?'
  const seconds = Math.max(0, Math.round((now - ms) / 1000))
  if (seconds < 60) return `${seconds}s ago`
  if (seconds < 3600) return `${Math.round(seconds / 60)}m ago`
  if (seconds < 86_400) return `${Math.round(seconds / 3600)}h ago`
  return `${Math.round(seconds / 86_400)}d ago`
}

/** The agents as a table of aligned text lines (header first), as `dsh agents` and `/agents` print it. */
export function agentLines(rows: readonly AgentRow[], now: number): string[] {
  const table = [['SESSION', 'KIND', 'STATE', 'WHERE', 'MODEL', 'COST', 'ACTIVE']]
  for (const row of rows) {
    const state = row.detail ? `${row.state}: ${row.detail}` : row.state
    table.push([
      row.sessionId.slice(0, 12),
      row.kind,
      state.length > 48 ? `${state.slice(0, 45)}...` : state,
      row.branch ? `${row.cwd} [${row.branch}]` : row.cwd,
      row.model ?? '-',
      row.cost,
      ago(row.lastActivity, now),
    ])
  }
  return alignColumns(table)
}

/** The one agent `id` (or a unique prefix of one) names among `rows`; SESSION_NOT_FOUND otherwise. */
export function agentNamed(rows: readonly AgentRow[], id: string): AgentRow {
  const matches = rows.filter((row) => row.sessionId === id || row.sessionId.startsWith(id))
  if (matches.length === 1) return matches[0] as AgentRow
  throw new HarnessError(
    'SESSION_NOT_FOUND',
    matches.length === 0
      ? `no agent ${id} (dsh agents lists them)`
      : `${id} names ${matches.length} agents; give more of the id`,
    { id },
  )
}

/**
 * Stops a running agent of this machine: SIGTERM to its process, which cancels the turn and saves the
 * session. A subagent is stopped through its parent; one on another host, there.
 */
export function stopAgent(row: AgentRow): { pid: number } {
  const running = row.state === 'running' || row.state.startsWith('waiting')
  if (!running || row.pid === undefined)
    throw new HarnessError('AGENT_NOT_RUNNING', `${row.sessionId} is not running (${row.state})`, { id: row.sessionId })
  if (row.host && row.host !== hostname())
    throw new HarnessError('AGENT_ELSEWHERE', `${row.sessionId} runs on ${row.host}; stop it there`, { host: row.host })
  if (row.kind === 'child') {
    throw new HarnessError(
      'AGENT_IS_CHILD',
      `${row.sessionId} is a subagent of ${row.parentSession}; stop its parent (dsh agents stop ${row.parentSession?.slice(0, 12)})`,
      { parentSession: row.parentSession },
    )
  }
  process.kill(row.pid, 'SIGTERM')
  return { pid: row.pid }
}
