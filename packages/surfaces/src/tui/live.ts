// The live region under the transcript: what the running turn waits on (an approval, a question),
// what is queued, a status line, and the footer. Each is a small component the chat updates.
import type { ApprovalQuestion } from '@dsh/agent/approval'
import type { AskedQuestion } from '@dsh/interaction'
import { type Component, truncateToWidth, wrapTextWithAnsi } from '@mariozechner/pi-tui'
import type { GitFacts } from '../host/git.js'
import type { Theme } from './theme.js'

/**
 * An approval waiting for a key: `y` allow once, `a` allow for the rest of this chat, `n` reject (or a
 * typed reason and Enter; the model goes on), Esc reject and stop the turn;
 * with a suggested rule, `s` keeps it for this chat and `r` in the user's settings ("allow similar").
 */
export function approvalLines(theme: Theme, question: ApprovalQuestion, width: number): string[] {
  const lines = [theme.warn(`? approve: ${question.summary}`)]
  if (question.reason) lines.push(theme.dim(`  why: ${question.reason}`))
  const what = question.toolName ? `${question.toolName}${question.kind ? ` (${question.kind})` : ''}` : question.kind
  if (what) lines.push(theme.dim(`  grants: ${what}`))
  lines.push(
    `  ${theme.bold('y')} allow once   ${theme.bold('a')} allow for this chat   ${theme.bold('n')} reject (or type why, Enter)   ${theme.bold('Esc')} stop the turn`,
  )
  if (question.suggestedRule)
    lines.push(
      `  ${theme.bold('s')} allow similar for this chat   ${theme.bold('r')} always allow similar (your settings): ${question.suggestedRule}`,
    )
  return lines.flatMap((line) => wrapTextWithAnsi(line, width))
}

/** An `ask_user` question: its options are picked by number, or answered in the editor. */
export function questionLines(theme: Theme, question: AskedQuestion, width: number): string[] {
  const lines = [theme.accent(`? ${question.question}`)]
  for (const [index, option] of (question.options ?? []).entries())
    lines.push(`  ${theme.bold(String(index + 1))} ${option}`)
  lines.push(theme.dim('  type an answer and press Enter'))
  return lines.flatMap((line) => wrapTextWithAnsi(line, width))
}

/** A component whose lines come from a function of the width (re-evaluated on each render). */
export class Lines implements Component {
  constructor(private readonly lines: (width: number) => string[]) {}
  invalidate(): void {}
  render(width: number): string[] {
    return this.lines(width).map((line) => truncateToWidth(line, width))
  }
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

/** `⠋ working · Esc to cancel` while a turn runs; the spinner advances on a timer the chat owns. */
export function statusLine(theme: Theme, running: boolean, frame: number, hint: string | undefined): string {
  if (hint) return theme.warn(hint)
  if (!running) return ''
  return (
    theme.accent(`${SPINNER[frame % SPINNER.length]} working`) +
    theme.dim(' · Esc to cancel · Enter steers · Alt+Enter queues')
  )
}

export interface FooterFacts {
  model: string
  preset?: string | undefined
  mode?: string
  tokens?: number
  pressure?: number
  /** The session's cost so far (`$0.42`, `unknown`), once a request reported usage. */
  cost?: string
  sessionId: string
  queued: number
  /** The workspace's git branch, `*` marking uncommitted changes. */
  git?: GitFacts | undefined
  /** The user's status line command's line, or why there is none (`statusline.command`). */
  statusLine?: { text?: string; error?: string }
}

/**
 * `deepseek:deepseek-chat · preset code · workspace-write · 12.3k tokens (8%) · $0.42 · git main* · session 1a2b…`, broken
 * between facts onto more lines when the terminal is too narrow for one.
 */
export function footerLines(theme: Theme, facts: FooterFacts, width: number): string[] {
  const parts = [facts.model]
  if (facts.preset) parts.push(`preset ${facts.preset}`)
  if (facts.mode) parts.push(facts.mode)
  if (facts.tokens !== undefined) {
    const tokens = facts.tokens >= 1000 ? `${(facts.tokens / 1000).toFixed(1)}k` : String(facts.tokens)
    parts.push(`${tokens} tokens${facts.pressure !== undefined ? ` (${Math.round(facts.pressure * 100)}%)` : ''}`)
  }
  if (facts.cost !== undefined) parts.push(facts.cost)
  if (facts.queued > 0) parts.push(`${facts.queued} queued`)
  if (facts.git) parts.push(`git ${facts.git.branch}${facts.git.dirty ? '*' : ''}`)
  parts.push(`session ${facts.sessionId}`)
  const lines: string[] = []
  for (const part of parts) {
    const last = lines.at(-1)
    if (last !== undefined && last.length + 3 + part.length <= width) lines[lines.length - 1] = `${last} · ${part}`
    else lines.push(part)
  }
  const footer = lines.map((line) => theme.dim(line))
  // The user's line comes first, on its own row, as their command printed it (colours kept).
  if (facts.statusLine?.text) footer.unshift(facts.statusLine.text)
  else if (facts.statusLine?.error) footer.unshift(theme.dim(`status line: ${facts.statusLine.error}`))
  return footer
}
