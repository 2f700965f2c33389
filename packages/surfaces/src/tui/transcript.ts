// The transcript: committed session events become components of the scrollback, in log order. The
// same code renders a resumed session's history and the live turn, so both look alike.

import type { ToolPresentation } from '@dsh/agent/tools'
import { type ContextChip, contextChip } from '@dsh/attachments/chip'
import type {} from '@dsh/context'
import { describeGiveUp, describeRetry } from '@dsh/context/recovery-text'
import type {} from '@dsh/orchestration/subagents'
import type { AnySessionEvent, SessionEventMap } from '@dsh/session'
import { isEvent } from '@dsh/session'
import { type Component, Container, Spacer, Text } from '@mariozechner/pi-tui'
import { turnEndedText } from '../host/transcript.js'
import { Answer } from './answer.js'
import type { Theme } from './theme.js'
import { ToolLine } from './tool-line.js'

/** Reasoning, collapsed to one line unless the person expanded it (Ctrl-O). */
class Reasoning implements Component {
  private text = ''
  constructor(
    private readonly theme: Theme,
    private readonly expanded: () => boolean,
  ) {}
  append(delta: string): void {
    this.text += delta
  }
  invalidate(): void {}
  render(width: number): string[] {
    const words = this.text.trim().split(/\s+/).filter(Boolean).length
    const head = this.theme.dim(`∴ thinking (${words} words)${this.expanded() ? '' : ' · Ctrl-O to expand'}`)
    if (!this.expanded()) return [head]
    return [head, ...new Text(this.theme.dim(this.text.trim()), 2, 0).render(width)]
  }
}

const CHIP_ICON: Record<string, string> = { file: '+', directory: '+', session: '+', hidden: '-' }
/** An expanded chip shows this many lines of what it attached; the model read all of it. */
const CHIP_LINES = 40

/** An attached file, directory or session: one line, its content under it when expanded (Ctrl-O). */
class Chip implements Component {
  constructor(
    private readonly theme: Theme,
    private readonly chip: ContextChip,
    private readonly expanded: () => boolean,
  ) {}
  invalidate(): void {}
  render(width: number): string[] {
    const { kind, name, detail, body } = this.chip
    const viewable = kind !== 'hidden' && body.trim() !== ''
    const hint = viewable && !this.expanded() ? ' · Ctrl-O to view' : ''
    const head = this.theme.dim(`  ${CHIP_ICON[kind] ?? '+'} ${name} (${detail})${hint}`)
    if (!viewable || !this.expanded()) return [head]
    const lines = body.split('\n')
    const shown = lines.slice(0, CHIP_LINES).join('\n')
    const more = lines.length > CHIP_LINES ? `\n… ${lines.length - CHIP_LINES} more lines` : ''
    return [head, ...new Text(this.theme.dim(`${shown}${more}`), 4, 0).render(width)]
  }
}

export class Transcript extends Container {
  private answer: Answer | undefined
  private reasoning: Reasoning | undefined
  private readonly tools = new Map<string, ToolLine>()
  /** A running subagent's session, to the line of the call that runs it (a `task` call, or a nested one). */
  private readonly subagents = new Map<string, ToolLine>()
  /** A subagent's calls still running, by `session|callId` (ids are only unique within a session). */
  private readonly nestedCalls = new Map<string, ToolLine>()
  /** A subagent (by id) to the line of the call that runs it: a remote child's progress goes there. */
  private readonly runners = new Map<string, ToolLine>()
  /** A remote child's calls, by `subagentId|toolCallId`, as its progress reported them. */
  private readonly remoteCalls = new Map<string, ToolLine>()
  private expandReasoning = false

  constructor(
    private readonly theme: Theme,
    private readonly present: (name: string, args: unknown) => ToolPresentation,
  ) {
    super()
  }

  /** Ctrl-O: every reasoning line shows its full text and every attachment chip its content, or only their size. */
  toggleReasoning(): void {
    this.expandReasoning = !this.expandReasoning
  }

  /** A line of the terminal's own (a command's outcome, a hint); not part of the session. */
  note(text: string, style: (s: string) => string = this.theme.dim): void {
    this.addChild(new Text(style(text), 0, 0))
  }

  add(event: AnySessionEvent): void {
    if (isEvent(event, 'user/message')) {
      if (event.data.origin === 'context' || event.surfaceOp?.op === 'replace') return
      // An attached file, directory or session is a chip here; the model reads the whole block.
      const blocks = event.data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : []))
      const chips = blocks.map((block) => contextChip(block))
      const text = blocks.filter((_, index) => !chips[index]).join('\n')
      if (!text.trim() && !chips.some(Boolean)) return
      this.endAnswer()
      const label = event.data.origin === 'compaction' ? 'summary of earlier context' : undefined
      this.addChild(new Spacer(1))
      this.addChild(new Text(label ? this.theme.dim(`› (${label})`) : this.theme.user(`› ${text}`), 0, 0))
      for (const chip of chips) {
        if (chip) this.addChild(new Chip(this.theme, chip, () => this.expandReasoning))
      }
    } else if (isEvent(event, 'assistant/chunk')) {
      const chunk = event.data.chunk
      if (chunk.type === 'text-delta' && chunk.text) this.openAnswer().append(chunk.text)
      else if (chunk.type === 'reasoning-delta' && chunk.text) this.openReasoning().append(chunk.text)
    } else if (isEvent(event, 'assistant/message')) {
      // A replayed message has no chunks: its text arrives whole.
      const streamed = this.answer !== undefined || this.reasoning !== undefined
      if (!streamed) {
        for (const block of event.data.message.content) {
          if (block.type === 'reasoning' && block.text) this.openReasoning().append(block.text)
          else if (block.type === 'text' && block.text) this.openAnswer().append(block.text)
        }
      }
      this.endAnswer()
    } else if (isEvent(event, 'tool/call')) {
      this.endAnswer()
      const call = event.data.call
      const line = new ToolLine(this.theme, call.id, this.present(call.name, call.arguments))
      this.tools.set(call.id, line)
      this.addChild(line)
    } else if (isEvent(event, 'tool/result')) {
      const line = this.tools.get(event.data.message.toolCallId)
      line?.settle(event.data.message, event.data.code)
      this.tools.delete(event.data.message.toolCallId)
    } else if (isEvent(event, 'subagent/started')) {
      this.adopt(event.data, this.tools)
    } else if (isEvent(event, 'subagent/progress')) {
      this.progress(event.data)
    } else if (isEvent(event, 'turn/end')) {
      this.endAnswer()
      const { reason, message } = event.data
      if (reason !== 'completed') {
        const style = reason === 'error' ? this.theme.error : this.theme.warn
        this.note(`■ ${turnEndedText(reason)}${message ? `: ${message}` : ''}`, style)
      }
    } else if (event.type === 'compaction/end') {
      this.note('≡ earlier context was compacted into a summary')
    } else if (isEvent(event, 'recovery/retry')) {
      this.note(`↻ ${describeRetry(event.data)}`, this.theme.warn)
    } else if (isEvent(event, 'recovery/give-up')) {
      this.note(`↻ ${describeGiveUp(event.data)}`, this.theme.error)
    }
  }

  /** Whether `sessionId` is a subagent this transcript shows under one of its calls. */
  isChild(sessionId: string): boolean {
    return this.subagents.has(sessionId)
  }

  /** An event of a subagent's session: its calls become compact lines under the call that runs it. */
  childEvent(sessionId: string, event: AnySessionEvent): boolean {
    const parent = this.subagents.get(sessionId)
    if (!parent) return false
    if (isEvent(event, 'tool/call')) {
      const call = event.data.call
      const line = new ToolLine(this.theme, call.id, this.present(call.name, call.arguments))
      this.nestedCalls.set(`${sessionId}|${call.id}`, line)
      parent.nest(line)
    } else if (isEvent(event, 'tool/result')) {
      const key = `${sessionId}|${event.data.message.toolCallId}`
      this.nestedCalls.get(key)?.settle(event.data.message, event.data.code)
      this.nestedCalls.delete(key)
    } else if (isEvent(event, 'subagent/started')) {
      const own = new Map(
        [...this.nestedCalls].flatMap(([key, line]) =>
          key.startsWith(`${sessionId}|`) ? [[key.slice(sessionId.length + 1), line] as const] : [],
        ),
      )
      this.adopt(event.data, own)
    } else if (isEvent(event, 'subagent/progress')) {
      this.progress(event.data)
    } else {
      return false
    }
    return true
  }

  /** A `subagent/started` names the call that runs the child: the child's calls go under that call's line. */
  private adopt(
    started: { subagentId: string; callId?: string; childSession: string },
    lines: ReadonlyMap<string, ToolLine>,
  ): void {
    const line = started.callId === undefined ? undefined : lines.get(started.callId)
    if (!line) return
    this.subagents.set(started.childSession, line)
    this.runners.set(started.subagentId, line)
  }

  /** What a child in another process did (decision 301): its calls and words under the call that runs it. */
  private progress(progress: SessionEventMap['subagent/progress']): void {
    const runner = this.runners.get(progress.subagentId)
    if (!runner) return
    if (progress.kind !== 'tool') {
      runner.childSaid(progress.kind, progress.text)
      return
    }
    const key = `${progress.subagentId}|${progress.toolCallId}`
    let line = this.remoteCalls.get(key)
    if (!line) {
      line = new ToolLine(this.theme, progress.toolCallId, { kind: 'generic', title: progress.title })
      this.remoteCalls.set(key, line)
      runner.nest(line)
    }
    line.progress(progress.status)
    if (line.settled) this.remoteCalls.delete(key)
  }

  private openAnswer(): Answer {
    if (!this.answer) {
      this.answer = new Answer(this.theme)
      this.addChild(new Spacer(1))
      this.addChild(this.answer)
    }
    return this.answer
  }

  private openReasoning(): Reasoning {
    if (!this.reasoning) {
      this.reasoning = new Reasoning(this.theme, () => this.expandReasoning)
      this.addChild(this.reasoning)
    }
    return this.reasoning
  }

  private endAnswer(): void {
    this.answer?.finish()
    this.answer = undefined
    this.reasoning = undefined
  }
}
