// One compact line per tool call that grows into its result: `● Title  subject` while it runs, then
// the outcome under it (a coloured diff for file changes, the tail of command output, errors in red,
// "outcome unknown" for a call a crash interrupted). Output is cut to a few lines, so a command that
// prints 50,000 lines costs the screen no more than one that prints five. A `task` call's line also
// holds the child agent's calls, indented under it, from the child session's events, or for a child
// in another process (an ACP agent) from the `subagent/progress` events the parent's log holds: its
// calls by state, and the last piece of text or thought it produced.

import type { ToolPresentation } from '@dsh/agent/tools'
import type { ToolResultMessage } from '@dsh/llm'
import { type Component, truncateToWidth, wrapTextWithAnsi } from '@mariozechner/pi-tui'
import type { Theme } from './theme.js'

const TAIL_LINES = 6
const DIFF_LINES = 10
/** A subagent's calls shown under its task line; earlier ones are counted, not shown. */
const NESTED_CALLS = 6

export type ToolState = 'running' | 'done' | 'failed' | 'unknown'

export class ToolLine implements Component {
  private state: ToolState = 'running'
  private output: string[] = []
  private hiddenLines = 0
  private note = ''
  private cache: { width: number; lines: string[] } | undefined
  private readonly nested: ToolLine[] = []
  private parent: ToolLine | undefined
  /** A remote child's last piece of text or thought, shown under its calls. */
  private said: { kind: 'message' | 'thought'; text: string } | undefined

  constructor(
    private readonly theme: Theme,
    readonly callId: string,
    private readonly presentation: ToolPresentation,
  ) {}

  /** A call of the subagent this call runs: shown under this line as one compact line of its own. */
  nest(line: ToolLine): void {
    line.parent = this
    this.nested.push(line)
    this.invalidate()
  }

  /** A remote child's call changed state (it has no result message, only its state). */
  progress(status: 'pending' | 'in_progress' | 'completed' | 'failed'): void {
    this.state = status === 'completed' ? 'done' : status === 'failed' ? 'failed' : 'running'
    this.invalidate()
  }

  /** A remote child's latest piece of text (`message`) or reasoning (`thought`). */
  childSaid(kind: 'message' | 'thought', text: string): void {
    this.said = { kind, text }
    this.invalidate()
  }

  /** The call's result arrived (`code` is the pipeline's or repair's error code). */
  settle(message: ToolResultMessage, code: string | undefined): void {
    this.state = code === 'TOOL_OUTCOME_UNKNOWN' ? 'unknown' : message.isError ? 'failed' : 'done'
    const text = message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n')
    const lines = text.replace(/\s+$/, '').split('\n')
    const keep = this.state === 'done' ? TAIL_LINES : TAIL_LINES * 2
    this.hiddenLines = Math.max(0, lines.length - keep)
    this.output = lines.slice(-keep)
    if (this.state === 'unknown') this.note = 'outcome unknown: dsh stopped while it ran'
    else if (code && this.state === 'failed') this.note = code
    this.invalidate()
  }

  get settled(): boolean {
    return this.state !== 'running'
  }

  invalidate(): void {
    this.cache = undefined
    this.parent?.invalidate()
  }

  render(width: number): string[] {
    if (this.cache?.width === width) return this.cache.lines
    const t = this.theme
    const p = this.presentation
    const bullet =
      this.state === 'running'
        ? t.warn('○')
        : this.state === 'done'
          ? t.ok('●')
          : this.state === 'unknown'
            ? t.warn('?')
            : t.error('✗')
    const subject = p.kind === 'terminal' ? p.command : p.kind === 'diff' ? p.path : (p.subtitle ?? '')
    const head = truncateToWidth(`${bullet} ${t.bold(p.title)} ${t.dim(subject.split('\n')[0] ?? '')}`, width)
    const lines = [head]
    if (this.parent) {
      // A subagent's call: its head, and why it failed; its own subagent's calls under it.
      if (this.note) lines.push(truncateToWidth(`  ${t.error(this.note)}`, width))
      lines.push(...this.nestedLines(width))
      this.cache = { width, lines }
      return lines
    }
    lines.push(...this.nestedLines(width))
    const inner = Math.max(1, width - 4)
    const body = (text: string, style: (s: string) => string = (s) => s) => {
      for (const wrapped of wrapTextWithAnsi(style(text), inner)) {
        lines.push(truncateToWidth(`  ${t.dim('│')} ${wrapped}`, width))
      }
    }
    if (p.kind === 'diff' && this.state !== 'failed') this.diffLines(p, body)
    if (this.note) body(this.note, this.state === 'unknown' ? t.warn : t.error)
    if (this.state !== 'done' || p.kind === 'terminal') {
      if (this.hiddenLines > 0) body(`… ${this.hiddenLines} more lines above`, t.dim)
      const style = this.state === 'failed' ? t.error : t.dim
      for (const line of this.output) if (line) body(truncateToWidth(line, inner), style)
    }
    this.cache = { width, lines }
    return lines
  }

  private nestedLines(width: number): string[] {
    const hidden = Math.max(0, this.nested.length - NESTED_CALLS)
    const lines = hidden > 0 ? [truncateToWidth(`  ${this.theme.dim(`… ${hidden} earlier calls`)}`, width)] : []
    for (const line of this.nested.slice(hidden)) {
      for (const row of line.render(Math.max(1, width - 2))) lines.push(`  ${row}`)
    }
    if (this.said) {
      const mark = this.said.kind === 'thought' ? '∴' : '»'
      const text = this.said.text.replace(/\s+/g, ' ').trim()
      lines.push(truncateToWidth(`  ${this.theme.dim(`${mark} ${text}`)}`, width))
    }
    return lines
  }

  /** The change as `-`/`+` lines (the presentation's before/after: the edited text, not the file). */
  private diffLines(
    p: Extract<ToolPresentation, { kind: 'diff' }>,
    body: (text: string, style?: (s: string) => string) => void,
  ) {
    const before = p.before ? p.before.split('\n') : []
    const after = p.after ? p.after.split('\n') : []
    const shown = [...before.map((line) => ['-', line] as const), ...after.map((line) => ['+', line] as const)]
    for (const [sign, line] of shown.slice(0, DIFF_LINES)) {
      body(`${sign} ${line}`, sign === '-' ? this.theme.removed : this.theme.added)
    }
    if (shown.length > DIFF_LINES) body(`… ${shown.length - DIFF_LINES} more changed lines`, this.theme.dim)
  }
}
