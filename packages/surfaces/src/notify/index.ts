// @dsh/surfaces/notify: when a session needs its user (an approval waits, the model asked a question)
// or a turn ended, the user's `notify.command` runs with the facts as JSON on stdin, e.g. a desktop
// notification (`notify-send`), a phone push, a sound. Subagents never ask a person, so only root
// sessions notify. The terminal chat rings the bell on the same moments (see tui/chat).
import { spawn } from 'node:child_process'
import type {} from '@dsh/agent/approval'
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/orchestration/subagents'
import { type AnySessionEvent, isEvent, type Session } from '@dsh/session'
import type {} from '@dsh/settings'

declare module '@dsh/settings' {
  interface SettingsMap {
    'notify.command': string
    'notify.minTurnSeconds': number
  }
}

export type NotifyKind = 'approval' | 'question' | 'done' | 'failed'

/** What the command reads on stdin. */
export interface Notification {
  kind: NotifyKind
  sessionId: string
  cwd: string
  /** One line a person reads: the action waiting, the question, or how the turn ended. */
  summary: string
  /** For done/failed: the turn's end reason. */
  reason?: string
}

const TIMEOUT_MS = 10_000
/** How long an approval or a question must wait before anyone is notified of it. */
const SETTLE_MS = 1000

/** Whether what `asked` waits on was settled since `from`: its decision, its call's result, or the turn's end. */
function settledSince(session: Session, from: number, asked: AnySessionEvent): boolean {
  const requestId = isEvent(asked, 'approval/asked') ? asked.data.requestId : undefined
  const callId = isEvent(asked, 'tool/call') ? asked.data.call.id : undefined
  return session.events.slice(from).some((event) => {
    if (isEvent(event, 'turn/end')) return true
    if (isEvent(event, 'approval/decided')) return event.data.requestId === requestId
    if (isEvent(event, 'tool/result')) return event.data.message.toolCallId === callId
    return false
  })
}

/** The notification an event calls for, if any (`turnStarted`: when the turn that just ended began). */
export function notificationOf(
  session: Session,
  event: AnySessionEvent,
  turnStarted: number | undefined,
  minTurnMs: number,
): Notification | undefined {
  const base = { sessionId: session.id, cwd: session.header.cwd }
  if (isEvent(event, 'approval/asked'))
    return { ...base, kind: 'approval', summary: `${event.data.toolName ?? 'an action'}: ${event.data.summary}` }
  if (isEvent(event, 'tool/call')) {
    const call = event.data.call
    if (call.name !== 'ask_user') return undefined
    return { ...base, kind: 'question', summary: String(call.arguments?.question ?? '') }
  }
  if (isEvent(event, 'turn/end')) {
    // Short turns are answered while the person watches: only a turn that took a while notifies.
    if (turnStarted === undefined || event.time - turnStarted < minTurnMs) return undefined
    const reason = event.data.reason
    return {
      ...base,
      kind: reason === 'completed' ? 'done' : 'failed',
      summary: reason === 'completed' ? 'the turn is done' : `the turn ended: ${reason}`,
      reason,
    }
  }
  return undefined
}

export const name = 'notify'
export const inject = ['settings', 'sessions']

export function apply(ctx: Context): void {
  ctx.settings.define('notify.command', {
    schema: { type: 'string' },
    default: '',
    description:
      'a shell command run when a session needs you (an approval, a question) or a long turn ended; it reads {kind, sessionId, cwd, summary, reason} as JSON on stdin, e.g. jq -r .summary | xargs -0 notify-send dsh',
    allowed: 'a shell command',
  })
  ctx.settings.define('notify.minTurnSeconds', {
    schema: { type: 'integer', minimum: 0, maximum: 86_400 },
    default: 20,
    description: 'a turn notifies when it ends only if it ran at least this long (approvals and questions always do)',
    allowed: 'seconds',
    projectSafe: true,
  })
  const turnStart = new Map<string, number>()
  ctx.effect(
    () =>
      ctx.sessions.watch((session, event) => {
        if (session.header.parentSession && isChild(ctx, session)) return
        if (event.type === 'turn/start') turnStart.set(session.id, event.time)
        const command = ctx.settings.get('notify.command')
        if (!command?.trim()) return
        const minTurnMs = (ctx.settings.get('notify.minTurnSeconds') ?? 20) * 1000
        const note = notificationOf(session, event as AnySessionEvent, turnStart.get(session.id), minTurnMs)
        if (!note) return
        if (note.kind === 'done' || note.kind === 'failed') return run(command, note, session.header.cwd)
        // An approval a rule, a grant or a headless run's static answer settles at once, or a question
        // answered right away, needs nobody: notify only if it still waits a moment later.
        const from = session.length
        const timer = setTimeout(() => {
          if (!settledSince(session, from, event as AnySessionEvent)) run(command, note, session.header.cwd)
        }, SETTLE_MS)
        timer.unref()
      }),
    'notify.watch',
  )
}

/** A subagent's session (a live child of another session): nobody is asked on its behalf. */
function isChild(ctx: Context, session: Session): boolean {
  return (
    ctx
      .get('subagents')
      ?.list()
      .some((child) => child.childSession === session.id) ?? false
  )
}

function run(command: string, note: Notification, cwd: string): void {
  try {
    const child = spawn('bash', ['-c', command], { cwd, stdio: ['pipe', 'ignore', 'ignore'], detached: true })
    const timer = setTimeout(() => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL')
      } catch {}
    }, TIMEOUT_MS)
    timer.unref()
    child.on('exit', () => clearTimeout(timer))
    child.on('error', () => clearTimeout(timer))
    child.stdin.on('error', () => {})
    child.stdin.end(`${JSON.stringify(note)}\n`)
    child.unref()
  } catch {
    // A notification is best effort: it never stops the session.
  }
}

export default { name, inject, apply }
