// The editor's input history and its Ctrl-R reverse search. The history holds what the person typed
// in this chat and, for a resumed session, the messages they typed before (so Up and Ctrl-R reach
// them too). pi-tui's editor keeps its own copy for Up/Down; this one is searchable.
import { type Editor, matchesKey } from '@mariozechner/pi-tui'

/** What a key did to a running search. */
export type SearchOutcome = 'searching' | 'accepted' | 'submitted' | 'cancelled'

export class InputHistory {
  /** Newest first, no consecutive duplicates (the editor's rule). */
  private readonly entries: string[] = []
  private search: { query: string; index: number; before: string } | undefined

  constructor(private readonly editor: Editor) {}

  add(text: string): void {
    const trimmed = text.trim()
    if (!trimmed || this.entries[0] === trimmed) return
    this.entries.unshift(trimmed)
    this.editor.addToHistory(trimmed)
  }

  get searching(): boolean {
    return this.search !== undefined
  }

  /** The status line while searching: the query and whether anything matches it. */
  status(): string | undefined {
    if (!this.search) return undefined
    const { query, index } = this.search
    const found = index >= 0 ? '' : query ? ' (no match)' : ''
    return `search history: "${query}"${found} · Ctrl-R older · Enter send · Tab edit · Esc cancel`
  }

  /** Ctrl-R: starts a search (the editor's text is kept to restore on Esc). */
  start(): void {
    this.search = { query: '', index: -1, before: this.editor.getText() }
  }

  /** A key while searching. The editor shows the current match; Enter leaves it there to be sent. */
  key(data: string): SearchOutcome {
    const search = this.search
    if (!search) return 'cancelled'
    if (matchesKey(data, 'ctrl+r')) {
      this.find(search.query, search.index + 1, true)
      return 'searching'
    }
    if (matchesKey(data, 'escape') || matchesKey(data, 'ctrl+g') || matchesKey(data, 'ctrl+c')) {
      this.editor.setText(search.before)
      this.search = undefined
      return 'cancelled'
    }
    if (matchesKey(data, 'enter')) {
      this.search = undefined
      return 'submitted'
    }
    if (matchesKey(data, 'backspace')) {
      this.find(search.query.slice(0, -1), 0)
      return 'searching'
    }
    // Printable text (a key or a paste) narrows the search; any other key leaves the match to edit.
    if (isPrintable(data)) {
      this.find(search.query + data, Math.max(search.index, 0))
      return 'searching'
    }
    this.search = undefined
    return 'accepted'
  }

  /** Shows the newest entry from `from` on that contains `query` (case-insensitive). */
  private find(query: string, from: number, keepOnMiss = false): void {
    const search = this.search
    if (!search) return
    const needle = query.toLowerCase()
    const index = query ? this.entries.findIndex((entry, i) => i >= from && entry.toLowerCase().includes(needle)) : -1
    // Ctrl-R past the oldest match stays on it, as a shell does.
    if (index < 0 && keepOnMiss) return
    search.query = query
    search.index = index
    this.editor.setText(index >= 0 ? (this.entries[index] ?? '') : search.before)
  }
}

/** No control character (C0 or DEL): typed or pasted text rather than a key sequence. */
function isPrintable(data: string): boolean {
  return [...data].every((char) => {
    const code = char.codePointAt(0) ?? 0
    return code >= 0x20 && code !== 0x7f
  })
}
