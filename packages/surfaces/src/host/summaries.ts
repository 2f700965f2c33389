// The session list a host shows: the store's durable rows, with the live facts of the sessions the
// host drives laid over them (a session whose first write has not landed yet is listed too).
import type { Agent } from '@dsh/agent'
import type {} from '@dsh/context/title'
import { isEvent, type Session } from '@dsh/session'
import { isConversationMessage, type SessionHolder, type SessionSummary } from '@dsh/session/store'

/** One row of `SessionHost.list()`. */
export interface HostedSession {
  sessionId: string
  cwd: string
  title?: string
  createdAt: number
  updatedAt: number
  parentSessionId?: string
  eventCount: number
  /** What the person sent and the model answered; absent when the store does not keep the count. */
  messageCount?: number
  /** Whether this host drives the session. */
  attached: boolean
  status: 'detached' | 'idle' | 'running'
  /** Set when the store could not read the log (`CODE: message`); the other fields are best effort. */
  error?: string
  /**
   * Another process's lease on the session (a store shared by many hosts): `live` means it is busy
   * there; not live means resuming it here takes it over. On an attached row: this host lost it.
   */
  holder?: SessionHolder
}

export function mergeSessionList(
  durable: readonly SessionSummary[],
  agents: readonly Agent[],
  statusOf: (sessionId: string) => HostedSession['status'],
): HostedSession[] {
  const rows = new Map<string, HostedSession>()
  for (const summary of durable) {
    rows.set(summary.id, {
      sessionId: summary.id,
      cwd: summary.cwd,
      ...(summary.title ? { title: summary.title } : {}),
      createdAt: summary.createdAt,
      updatedAt: summary.updatedAt,
      ...(summary.parentSession ? { parentSessionId: summary.parentSession } : {}),
      eventCount: summary.eventCount,
      ...(summary.messageCount !== undefined ? { messageCount: summary.messageCount } : {}),
      attached: false,
      status: 'detached',
      ...(summary.error ? { error: summary.error } : {}),
      ...(summary.holder ? { holder: summary.holder } : {}),
    })
  }
  for (const agent of agents) {
    const session = agent.session
    const header = session.header
    const durableRow = rows.get(session.id)
    const title = titleOf(session) ?? durableRow?.title
    rows.set(session.id, {
      sessionId: session.id,
      cwd: header.cwd,
      ...(title ? { title } : {}),
      createdAt: header.createdAt,
      updatedAt: session.events.at(-1)?.time ?? header.createdAt,
      ...(header.parentSession ? { parentSessionId: header.parentSession } : {}),
      eventCount: session.length,
      messageCount: session.events.filter(isConversationMessage).length,
      attached: true,
      status: statusOf(session.id),
      ...(durableRow?.holder ? { holder: durableRow.holder } : {}),
    })
  }
  return [...rows.values()].sort((a, b) => b.updatedAt - a.updatedAt)
}

/** The first user message a person typed in a live session, shortened (the store titles durable rows). */
export function titleOf(session: Session): string | undefined {
  const written = session.events.findLast((event) => isEvent(event, 'session/title'))
  if (written && isEvent(written, 'session/title')) return written.data.title
  for (const event of session.events) {
    if (!isEvent(event, 'user/message') || event.data.origin) continue
    // The first text block is what the person typed; attachments and `@` references follow it.
    const first = event.data.message.content[0]
    const text = (first?.type === 'text' ? first.text : '').trim()
    if (text) return text.length > 80 ? `${text.slice(0, 77)}...` : text
  }
  return undefined
}
