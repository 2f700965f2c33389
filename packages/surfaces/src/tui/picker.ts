// `dsh --resume` without an id: the recent sessions of this directory in a list; Enter opens one,
// Esc leaves without choosing.

import { SelectList, Text } from '@mariozechner/pi-tui'
import type { HostedSession } from '../host/index.js'
import type { ChatScreen } from './screen.js'

const SHOWN = 20

function age(ms: number): string {
  const minutes = Math.round((Date.now() - ms) / 60_000)
  if (minutes < 1) return 'just now'
  if (minutes < 60) return `${minutes}m ago`
  const hours = Math.round(minutes / 60)
  return hours < 48 ? `${hours}h ago` : `${Math.round(hours / 24)}d ago`
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`

/** Resolves with the chosen session id, or undefined when the person pressed Esc. */
export function pickSession(screen: ChatScreen, sessions: HostedSession[]): Promise<string | undefined> {
  const { tui, theme, editor } = screen
  const items = sessions.slice(0, SHOWN).map((session) => ({
    value: session.sessionId,
    label: session.title?.split('\n')[0] ?? session.sessionId,
    description: `${age(session.updatedAt)} · ${session.messageCount !== undefined ? plural(session.messageCount, 'message') : plural(session.eventCount, 'event')} · ${session.sessionId}`,
  }))
  const title = new Text(theme.bold('Resume a session of this directory (Enter opens, Esc leaves)'), 0, 0)
  const list = new SelectList(items, 10, theme.select)
  // Above the editor, which keeps its place at the bottom.
  tui.children.splice(tui.children.indexOf(editor), 0, title, list)
  tui.setFocus(list)
  tui.requestRender()
  return new Promise((resolve) => {
    const finish = (id: string | undefined) => {
      // The title stays as a note: pi-tui leaves the first row stale when the content becomes empty.
      title.setText(theme.dim(id ? `resuming ${id}` : 'no session chosen'))
      tui.removeChild(list)
      tui.setFocus(editor)
      tui.requestRender()
      resolve(id)
    }
    list.onSelect = (item) => finish(item.value)
    list.onCancel = () => finish(undefined)
  })
}
