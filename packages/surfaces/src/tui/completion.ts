// What Tab and the completion menu offer: `/` the registered commands (with their usage and help),
// `@` files of the workspace. pi-tui's provider does commands and plain paths; its `@` search needs
// the `fd` binary, so `@` is answered here from a bounded walk of the working directory instead.
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import {
  type AutocompleteItem,
  type AutocompleteProvider,
  type AutocompleteSuggestions,
  CombinedAutocompleteProvider,
  fuzzyFilter,
  type SlashCommand,
} from '@mariozechner/pi-tui'

/** Bounds of the workspace walk: a huge tree costs a capped scan, never a hang. */
const MAX_FILES = 5000
const MAX_DEPTH = 8
const SHOWN = 20
/** A walk is reused for this long (files created meanwhile show up after it). */
const FRESH_MS = 10_000
const SKIPPED = new Set(['node_modules', 'dist', 'build', 'target'])

export class ChatCompletion implements AutocompleteProvider {
  private readonly inner: CombinedAutocompleteProvider
  private walk: { at: number; files: Promise<string[]> } | undefined

  constructor(
    commands: SlashCommand[],
    private readonly cwd: string,
  ) {
    this.inner = new CombinedAutocompleteProvider(commands, cwd, null)
  }

  async getSuggestions(
    lines: string[],
    cursorLine: number,
    cursorCol: number,
    options: { signal: AbortSignal; force?: boolean },
  ): Promise<AutocompleteSuggestions | null> {
    const before = (lines[cursorLine] ?? '').slice(0, cursorCol)
    const at = /(?:^|\s)(@[^\s@"]*)$/.exec(before)?.[1]
    if (!at) return this.inner.getSuggestions(lines, cursorLine, cursorCol, options)
    const files = await this.files()
    const items: AutocompleteItem[] = fuzzyFilter(files, at.slice(1), (path) => path)
      .slice(0, SHOWN)
      .map((path) => ({ value: `@${path}`, label: path }))
    return items.length > 0 ? { items, prefix: at } : null
  }

  applyCompletion(lines: string[], cursorLine: number, cursorCol: number, item: AutocompleteItem, prefix: string) {
    return this.inner.applyCompletion(lines, cursorLine, cursorCol, item, prefix)
  }

  shouldTriggerFileCompletion(lines: string[], cursorLine: number, cursorCol: number): boolean {
    return this.inner.shouldTriggerFileCompletion(lines, cursorLine, cursorCol)
  }

  private files(): Promise<string[]> {
    if (!this.walk || Date.now() - this.walk.at > FRESH_MS) {
      this.walk = { at: Date.now(), files: listFiles(this.cwd) }
    }
    return this.walk.files
  }
}

/** Workspace-relative file paths, breadth first, skipping dot directories and build output. */
async function listFiles(root: string): Promise<string[]> {
  const files: string[] = []
  let level = ['']
  for (let depth = 0; depth < MAX_DEPTH && level.length > 0 && files.length < MAX_FILES; depth++) {
    const next: string[] = []
    for (const dir of level) {
      const entries = await readdir(join(root, dir), { withFileTypes: true }).catch(() => [])
      for (const entry of entries) {
        const path = dir ? `${dir}/${entry.name}` : entry.name
        if (entry.isDirectory()) {
          if (!entry.name.startsWith('.') && !SKIPPED.has(entry.name)) next.push(path)
        } else if (files.length < MAX_FILES) {
          files.push(path)
        }
      }
    }
    level = next
  }
  return files
}
