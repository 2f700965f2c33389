// @dsh/surfaces/statusline: `ctx.statusLine`, the user's own status line (issue 33). The
// `statusline.command` setting names a shell command; it gets the session's state as JSON on stdin and
// the first line of its stdout is shown in the terminal footer and the web header. The JSON has the
// fields the most used agent's status line scripts read, where dsh has them (`model.display_name`,
// `workspace.current_dir`, `cost.total_cost_usd`, `context_window`...), plus dsh's own (`preset`,
// `mode`, `git_branch`, `context_share`). At most one run per session every 300 ms, bounded by
// `statusline.timeoutMs`; a failure or a timeout is shown as such, never a stall. The command is the
// user's: a project's settings cannot set it (it runs code).
import { spawn } from 'node:child_process'
import type { Agent } from '@dsh/agent'
import type {} from '@dsh/interaction/rewind'
import { type Context, Service } from '@dsh/kernel'
import { isEvent, sessionUsage } from '@dsh/session'
import type {} from '@dsh/settings'

declare module '@dsh/settings' {
  interface SettingsMap {
    'statusline.command': string
    'statusline.timeoutMs': number
  }
}

declare module 'cordis' {
  interface Context {
    statusLine: StatusLineService
  }
}

/** What a surface knows and the status line input carries. */
export interface StatusFacts {
  /** `provider:model` the next request uses. */
  model: string
  preset?: string
  mode?: string
  gitBranch?: string
  tokens?: number
  window?: number
  pressure?: number
}

export interface StatusLineState {
  /** The command's first line (control sequences other than colours removed). */
  text?: string
  /** Why there is no line: the command failed or timed out. */
  error?: string
}

const MIN_INTERVAL_MS = 300
// Colours (SGR) stay; every other escape or control character could move the cursor or clear the screen.
const ESC = '\\u001b'
const UNSAFE = new RegExp(
  `${ESC}\\[[0-9;]*[A-Za-ln-z]|${ESC}[\\]PX^_][^\\u0007${ESC}]*(?:\\u0007|${ESC}\\\\)?|${ESC}[^[]|[\\u0000-\\u0008\\u000b-\\u001a\\u001c-\\u001f\\u007f]`,
  'g',
)

/** The JSON a status line command reads on stdin. */
export function statusInput(agent: Agent, facts: StatusFacts, version: string): Record<string, unknown> {
  const session = agent.session
  const usage = sessionUsage(session.events, session.header.seedLength ?? 0)
  let added = 0
  let removed = 0
  let started: number | undefined
  for (const event of session.events) {
    if (event.type === 'turn/start' && started === undefined) started = event.time
    if (!isEvent(event, 'checkpoint/taken') || event.data.at !== 'turn-end') continue
    for (const change of event.data.changes ?? []) {
      added += change.added ?? 0
      removed += change.removed ?? 0
    }
  }
  const [provider, ...rest] = facts.model.includes(':') ? facts.model.split(':') : ['', facts.model]
  const modelId = rest.join(':') || facts.model
  return {
    hook_event_name: 'Status',
    session_id: session.id,
    cwd: session.header.cwd,
    version,
    model: { id: modelId, display_name: modelId, provider },
    workspace: { current_dir: session.header.cwd, project_dir: session.header.cwd },
    output_style: { name: facts.preset ?? 'default' },
    cost: {
      ...(usage.requests > usage.unknownRequests ? { total_cost_usd: usage.usd } : {}),
      total_duration_ms: started === undefined ? 0 : Date.now() - started,
      total_api_duration_ms: usage.modelMs,
      total_lines_added: added,
      total_lines_removed: removed,
    },
    ...(facts.window !== undefined
      ? { context_window: { context_window_size: facts.window, current_usage: { input_tokens: facts.tokens ?? 0 } } }
      : {}),
    exceeds_200k_tokens: (facts.tokens ?? 0) > 200_000,
    preset: facts.preset ?? null,
    mode: facts.mode ?? null,
    git_branch: facts.gitBranch ?? null,
    tokens: facts.tokens ?? null,
    context_share: facts.pressure ?? null,
  }
}

interface Slot {
  last: number
  running?: Promise<StatusLineState>
  queued?: Promise<StatusLineState>
  /** The facts of the newest refresh: what the queued run reads when it starts. */
  next?: { agent: Agent; facts: StatusFacts; version: string }
  state: StatusLineState
}

export class StatusLineService extends Service {
  private readonly _slots = new Map<string, Slot>()
  private readonly _abort = new AbortController()

  constructor(ctx: Context) {
    super(ctx, 'statusLine')
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('statusline.command', {
        schema: { type: 'string' },
        default: '',
        description:
          "a shell command whose first line of output is shown in the terminal footer and the web header; it reads the session's state as JSON on stdin",
        allowed: 'a shell command, e.g. ~/.dsh/statusline.sh',
      })
      inner.settings.define('statusline.timeoutMs', {
        schema: { type: 'integer', minimum: 50, maximum: 60_000 },
        default: 2000,
        description: 'how long the status line command may run before it is stopped',
        allowed: 'milliseconds',
        projectSafe: true,
      })
    })
    ctx.effect(() => () => this._abort.abort())
  }

  /** The configured command, if any. */
  command(): string | undefined {
    const settings = this.ctx.get('settings')
    const value = settings?.has('statusline.command') ? settings.get('statusline.command') : undefined
    return typeof value === 'string' && value.trim() ? value : undefined
  }

  /**
   * The status line of `agent` with these facts: runs the command at most once per 300 ms per session;
   * refreshes that arrive while a run waits share it (it reads the newest facts). Never rejects.
   */
  refresh(agent: Agent, facts: StatusFacts, version = '0.1.0'): Promise<StatusLineState> {
    const command = this.command()
    if (!command) return Promise.resolve({})
    const id = agent.session.id
    const slot = this._slots.get(id) ?? { last: 0, state: {} }
    this._slots.set(id, slot)
    // One run at a time and at most one waiting: the waiting one starts with the newest facts once the
    // running one is done and 300 ms have passed, so the last refresh of a burst never gets a stale line.
    slot.next = { agent, facts, version }
    if (slot.queued) return slot.queued
    const after = slot.running ?? Promise.resolve(slot.state)
    const queued = after.then(async () => {
      const wait = slot.last + MIN_INTERVAL_MS - Date.now()
      if (wait > 0) await new Promise<void>((resolve) => setTimeout(resolve, wait).unref())
      slot.queued = undefined
      const next = slot.next ?? { agent, facts, version }
      slot.last = Date.now()
      const input = JSON.stringify(statusInput(next.agent, next.facts, next.version))
      const running = this._run(command, input, next.agent.session.header.cwd)
      slot.running = running
      const state = await running
      slot.state = state
      if (slot.running === running) slot.running = undefined
      return state
    })
    slot.queued = queued
    return queued
  }

  private _run(command: string, input: string, cwd: string): Promise<StatusLineState> {
    const settings = this.ctx.get('settings')
    const configured = settings?.has('statusline.timeoutMs') ? settings.get('statusline.timeoutMs') : undefined
    const timeoutMs = typeof configured === 'number' ? configured : 2000
    return new Promise((resolve) => {
      let out = ''
      let err = ''
      let done = false
      const finish = (state: StatusLineState) => {
        if (done) return
        done = true
        clearTimeout(timer)
        resolve(state)
      }
      const child = spawn('bash', ['-c', command], {
        cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        signal: this._abort.signal,
      })
      const kill = () => {
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL')
        } catch {
          child.kill('SIGKILL')
        }
      }
      const timer = setTimeout(() => {
        kill()
        finish({ error: `the status line command took longer than ${timeoutMs} ms (statusline.timeoutMs)` })
      }, timeoutMs)
      child.stdout.on('data', (chunk: Buffer) => {
        if (out.length < 8192) out += chunk.toString('utf8')
      })
      child.stderr.on('data', (chunk: Buffer) => {
        if (err.length < 2048) err += chunk.toString('utf8')
      })
      child.on('error', (error) => finish({ error: `the status line command did not start: ${error.message}` }))
      child.on('close', (code) => {
        if (code !== 0)
          return finish({
            error: `the status line command failed (exit ${code})${err.trim() ? `: ${err.trim().split('\n')[0]}` : ''}`,
          })
        const first = out.split('\n')[0] ?? ''
        finish({ text: first.replace(UNSAFE, '').slice(0, 500) })
      })
      child.stdin.on('error', () => {})
      child.stdin.end(input)
    })
  }
}

export default StatusLineService
