// A streamed Markdown answer that costs O(new text) per delta: finished blocks are parsed once and
// cached; only the open tail is re-parsed as deltas arrive. Without this a 2,000-line answer re-parses
// everything on every delta (quadratic; see docs/decisions/220-terminal-ui-library.md).
import { type Component, Markdown } from '@mariozechner/pi-tui'
import type { Theme } from './theme.js'

/** Lines after which an open block is cut (a long list, a long code block) so the tail stays small. */
const MAX_BLOCK_LINES = 40
const FENCE = /^\s*(`{3,}|~{3,})(.*)$/

export class Answer implements Component {
  /** Finished blocks; `gap`: a blank line separated it from the previous one (not a cut). */
  private readonly done: Array<{ part: Markdown; gap: boolean }> = []
  /** Whether the open block follows a blank line. */
  private gap = false
  private readonly tail: Markdown
  /** Complete lines of the open block. */
  private block: string[] = []
  /** The text after the last newline. */
  private partial = ''
  /** The opening line of the fence the open block is inside, if any. */
  private fence: string | undefined

  constructor(private readonly theme: Theme) {
    this.tail = new Markdown('', 0, 0, theme.markdown)
  }

  append(delta: string): void {
    const pieces = (this.partial + delta).split('\n')
    this.partial = pieces.pop() ?? ''
    for (const line of pieces) this.addLine(line)
    this.tail.setText(this.openText())
  }

  /** Everything the stream said is final: parse the rest once. */
  finish(): void {
    if (this.partial) this.addLine(this.partial)
    this.partial = ''
    this.close()
    this.tail.setText('')
  }

  get empty(): boolean {
    return this.done.length === 0 && this.block.length === 0 && !this.partial
  }

  private addLine(line: string): void {
    const fence = FENCE.exec(line)
    if (fence) this.fence = this.fence ? undefined : line
    if (!this.fence && !line.trim()) {
      if (this.block.length > 0) this.close()
      this.gap = true
      return
    }
    this.block.push(line)
    if (this.block.length >= MAX_BLOCK_LINES) {
      // Cut a long block; inside a fence the next block reopens it so its lines stay code.
      const reopen = this.fence
      if (reopen) this.block.push(reopen.replace(FENCE, '$1'))
      this.close()
      if (reopen) {
        this.block.push(reopen)
        this.fence = reopen
      }
    }
  }

  private close(): void {
    const text = this.block.join('\n')
    this.block = []
    if (text.trim()) this.done.push({ part: new Markdown(text, 0, 0, this.theme.markdown), gap: this.gap })
    this.gap = false
  }

  private openText(): string {
    const lines = this.partial ? [...this.block, this.partial] : this.block
    return lines.join('\n')
  }

  invalidate(): void {
    for (const { part } of this.done) part.invalidate()
    this.tail.invalidate()
  }

  render(width: number): string[] {
    const lines: string[] = []
    for (const { part, gap } of this.done) {
      if (gap && lines.length > 0) lines.push('')
      lines.push(...part.render(width))
    }
    const open = this.tail.render(width)
    if (open.length > 0 && this.gap && lines.length > 0) lines.push('')
    lines.push(...open)
    return lines
  }
}
