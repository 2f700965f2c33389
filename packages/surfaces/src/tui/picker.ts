// Lists to choose from above the editor: `dsh --resume` without an id (the recent sessions of this
// directory; Enter opens one, Esc leaves without choosing) and the chat's `/model` without a name.

import { type SelectItem, SelectList, Text } from '@mariozechner/pi-tui'
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
  const items = sessions.slice(0, SHOWN).map((session) => ({
    value: session.sessionId,
    label: session.title?.split('\n')[0] ?? session.sessionId,
    description: `${age(session.updatedAt)} · ${session.messageCount !== undefined ? plural(session.messageCount, 'message') : plural(session.eventCount, 'event')} · ${session.sessionId}`,
  }))
  return pick(screen, {
    title: 'Resume a session of this directory (Enter opens, Esc leaves)',
    items,
    chosen: (id) => (id ? `resuming ${id}` : 'no session chosen'),
  })
}

/** What `pick` shows: a title line, the items, and the note the title becomes once it is answered. */
export interface PickOptions {
  title: string
  items: SelectItem[]
  /** The item selected first (its value). */
  selected?: string
  /** The title's note once answered; without it the title goes too (where other lines are on screen). */
  chosen?(value: string | undefined): string
}

/**
 * A list above the editor: arrow keys move, Enter resolves with the item's value, Esc with undefined.
 * The editor has the focus again afterwards; the title stays as a one-line note of the outcome (`chosen`).
 */
export function pick(
  screen: Pick<ChatScreen, 'tui' | 'theme' | 'editor'>,
  options: PickOptions,
): Promise<string | undefined> {
  const { tui, theme, editor } = screen
  const title = new Text(theme.bold(options.title), 0, 0)
  const list = new SelectList(options.items, 10, theme.select)
  const first = options.items.findIndex((item) => item.value === options.selected)
  if (first > 0) list.setSelectedIndex(first)
  // Above the editor, which keeps its place at the bottom.
  tui.children.splice(tui.children.indexOf(editor), 0, title, list)
  tui.setFocus(list)
  tui.requestRender()
  return new Promise((resolve) => {
    const finish = (value: string | undefined) => {
      // The title stays as a note when asked: pi-tui leaves the first row stale when the content becomes empty.
      if (options.chosen) title.setText(theme.dim(options.chosen(value)))
      else tui.removeChild(title)
      tui.removeChild(list)
      tui.setFocus(editor)
      tui.requestRender()
      resolve(value)
    }
    list.onSelect = (item) => finish(item.value)
    list.onCancel = () => finish(undefined)
  })
}
