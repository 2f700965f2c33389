// `dsh agents [ls|stop]`: every session running on this machine (a live lease: the chat, `dsh run`,
// the web and rpc hosts, their subagents and workflow children) or on the shared store (PostgreSQL
// leases), and the background runs with how they ended. State, model, cost and last activity come
// from each session's durable log (`sessionActivity`), never from the process.
import { readdirSync } from 'node:fs'
import { HarnessError } from '@dsh/kernel/errors'
import { ownerAlive, readLease, type SessionStore, type SessionSummary } from '@dsh/session/store'
import type {} from '@dsh/session/store/query'
import { sessionActivity } from '@dsh/surfaces/host'
import { type BackgroundRecord, backgroundDir, readRecords } from '../background.js'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { printable } from '../printable.js'
import { type RuntimeScope, withRuntime } from '../runtime.js'
import { userWorktrees } from '../worktree-session.js'

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
}

/** Sessions whose lease file has a live owner (lock-file stores), by id. */
function liveLocks(store: SessionStore): Map<string, { pid: number; host: string }> {
  const out = new Map<string, { pid: number; host: string }>()
  let names: string[] = []
  try {
    names = readdirSync(store.leaseDir).filter((name) => name.endsWith('.lock'))
  } catch {}
  for (const name of names) {
    const owner = readLease(`${store.leaseDir}/${name}`)
    if (owner && ownerAlive(owner)) out.set(name.slice(0, -'.lock'.length), { pid: owner.pid, host: owner.host })
  }
  return out
}

function backgroundState(record: BackgroundRecord, live: boolean): { state: AgentStateName; detail?: string } {
  if (record.endedAt !== undefined)
    return record.reason === 'completed'
      ? { state: 'done' }
      : { state: 'failed', detail: `${record.reason ?? 'error'} (exit ${record.exitCode ?? '?'})` }
  if (live) return { state: 'running' }
  return {
    state: 'interrupted',
    detail: `its process ended; resume it: dsh run --resume ${record.sessionId} "Continue."`,
  }
}

async function collect(scope: RuntimeScope, env: NodeJS.ProcessEnv, request: ComposeRequest): Promise<AgentRow[]> {
  const root = scope.runtime.root
  const store = root.sessionStore
  const query = root.get('sessionQuery')
  if (!query)
    throw new HarnessError('CONFIG_NO_QUERY', 'the profile has no session-query row; enable it to list agents', {})
  const leased = liveLocks(store)
  const summaries: SessionSummary[] = await query.list()
  const byId = new Map(summaries.map((summary) => [summary.id, summary]))
  // Stores that keep leases themselves (PostgreSQL shared by many hosts) say who holds each.
  for (const summary of summaries)
    if (summary.holder?.live) leased.set(summary.id, { pid: summary.holder.pid, host: summary.holder.host })
  const background = new Map(readRecords(backgroundDir(env)).map((record) => [record.sessionId, record]))
  const ids = [...new Set([...leased.keys(), ...background.keys()])]
  const worktrees = await userWorktrees(request)
    .list()
    .catch(() => [])
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
    if (owner || (record && record.endedAt === undefined && ownerAlive({ ...record, acquiredAt: 0, token: '' }))) {
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
      ;({ state, detail } = backgroundState(record, false))
    } else continue
    const parentSession = log?.header.parentSession ?? summary?.parentSession
    const branch = worktrees.find((view) => cwd === view.path || cwd.startsWith(`${view.path}/`))?.branch
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
      ...(summary?.title ? { title: summary.title } : {}),
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

export async function agentsList(request: ComposeRequest, options: { json?: boolean }, io: Io): Promise<number> {
  const env = request.env ?? process.env
  return withRuntime(request, io, async (scope) => {
    const rows = await collect(scope, env, request)
    if (options.json) {
      io.out(JSON.stringify(rows, null, 2))
      return ExitCode.OK
    }
    if (rows.length === 0) {
      io.err('dsh: no agent is running (dsh run --bg "<task>" starts one in the background)')
      return ExitCode.OK
    }
    const now = Date.now()
    const table = [['SESSION', 'KIND', 'STATE', 'WHERE', 'MODEL', 'COST', 'ACTIVE']]
    for (const row of rows) {
      const state = row.detail ? `${row.state}: ${row.detail}` : row.state
      table.push([
        row.sessionId.slice(0, 12),
        row.kind,
        printable(state.length > 48 ? `${state.slice(0, 45)}...` : state),
        printable(row.branch ? `${row.cwd} [${row.branch}]` : row.cwd),
        row.model ?? '-',
        row.cost,
        ago(row.lastActivity, now),
      ])
    }
    const widths = table[0]?.map((_, column) => Math.max(...table.map((line) => (line[column] ?? '').length))) ?? []
    for (const line of table)
      io.out(
        line
          .map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
          .join('  ')
          .trimEnd(),
      )
    io.err('dsh: dsh sessions show ID prints a transcript; dsh agents stop ID stops a running one')
    return ExitCode.OK
  })
}

/** Stops a running session of this machine: SIGTERM to its owner, which cancels and saves it. */
export async function agentsStop(request: ComposeRequest, id: string, io: Io): Promise<number> {
  const env = request.env ?? process.env
  return withRuntime(request, io, async (scope) => {
    const rows = await collect(scope, env, request)
    const matches = rows.filter((row) => row.sessionId === id || row.sessionId.startsWith(id))
    if (matches.length !== 1) {
      throw new HarnessError(
        'SESSION_NOT_FOUND',
        matches.length === 0
          ? `no running agent ${id} (dsh agents lists them)`
          : `${id} names ${matches.length} agents; give more of the id`,
        { id },
      )
    }
    const row = matches[0] as AgentRow
    const running = row.state === 'running' || row.state.startsWith('waiting')
    if (!running || row.pid === undefined) {
      io.err(`dsh: ${row.sessionId} is not running (${row.state})`)
      return ExitCode.OK
    }
    if (row.host && row.host !== (await import('node:os')).hostname()) {
      throw new HarnessError('USAGE', `${row.sessionId} runs on ${row.host}; stop it there`, { host: row.host })
    }
    if (row.kind === 'child') {
      throw new HarnessError(
        'USAGE',
        `${row.sessionId} is a subagent of ${row.parentSession}; stop its parent (dsh agents stop ${row.parentSession?.slice(0, 12)})`,
        {},
      )
    }
    process.kill(row.pid, 'SIGTERM')
    io.err(`dsh: asked ${row.sessionId} (pid ${row.pid}) to stop; it cancels its turn and saves the session`)
    return ExitCode.OK
  })
}
