// One open chat: the session's events flow into the transcript, the editor's lines go to the agent
// (or to a /command), keys answer approvals and questions, and the live region shows what is running.
import { basename } from 'node:path'
import type { Agent } from '@dsh/agent'
import type { ApprovalQuestion } from '@dsh/agent/approval'
import { presentationOf } from '@dsh/agent/tools'
import { contextChip } from '@dsh/attachments/chip'
import type {} from '@dsh/context'
import { type AskedQuestion, type CommandOutcome, commandAction } from '@dsh/interaction'
import { type FilesOutcome, pointLine, type RewindMode, type RewindPoint } from '@dsh/interaction/rewind'
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/lsp'
import { type AnySessionEvent, isEvent, sessionUsage, usageCostText } from '@dsh/session'
import { Container, type Editor, matchesKey, type TUI } from '@mariozechner/pi-tui'
import { type GitFacts, gitBranch, gitDirty } from '../host/git.js'
import type { HostRewind, Pending, SessionHost } from '../host/index.js'
import { ChatCompletion } from './completion.js'
import { loadCodeHighlighting } from './highlight.js'
import { InputHistory } from './history.js'
import { approvalLines, footerLines, Lines, questionLines, statusLine } from './live.js'
import { pastedImages } from './paste.js'
import { pick } from './picker.js'
import type { ChatScreen } from './screen.js'
import type { Theme } from './theme.js'
import { Transcript } from './transcript.js'

/** Two Ctrl-C presses within this window exit. */
const DOUBLE_PRESS_MS = 1500

export class Conversation {
  readonly transcript: Transcript
  private readonly history: InputHistory
  private readonly live = new Container()
  private frame = 0
  private spinner: ReturnType<typeof setInterval> | undefined
  private hint: string | undefined
  private lastCtrlC = 0
  /** While `/model`'s picker is open, its list has the keys. */
  private picking = false
  /** Image files pasted since the last message: sent with the next one. */
  private images: string[] = []
  private readonly stopChildEvents: () => void
  private reading: { tokens: number; pressure?: number; model?: string } | undefined
  /** The session's cost as the footer shows it, folded from the log after each answer. */
  private cost: string | undefined
  private closed!: () => void
  readonly done = new Promise<void>((resolve) => {
    this.closed = resolve
  })
  /** What the person asked for when the chat closed: leave, or go on in a fresh session (/new, /clear). */
  next: 'exit' | 'new-session' | 'switch' = 'exit'
  /** With `next: 'switch'`: the session a conversation rewind made, and the message to edit again. */
  switchTo: { sessionId: string; text: string; previous: string } | undefined
  private lastEsc = 0
  private readonly footer: Lines
  /** The user's status line, as its command last answered. */
  private status: { text?: string; error?: string } = {}
  private readonly stopKeys: () => void
  private readonly stopLspEvents: Array<() => void>
  private readonly stopDecided: () => void
  /** The approval whose rejection (Esc) also stops the turn. */
  private stopAfterDecision: string | undefined

  private readonly tui: TUI
  private readonly editor: Editor
  private readonly theme: Theme

  constructor(
    private readonly ctx: Context,
    screen: ChatScreen,
    private readonly host: SessionHost,
    private readonly agent: Agent,
  ) {
    this.tui = screen.tui
    this.editor = screen.editor
    this.theme = screen.theme
    // After first paint and boot: an answer's code blocks are coloured by language once this resolves.
    void loadCodeHighlighting(this.theme).catch(() => undefined)
    this.history = new InputHistory(this.editor)
    const tools = ctx.get('tools')
    this.transcript = new Transcript(this.theme, (name, args) => presentationOf(tools?.get(name), name, args))
    const commands = (ctx.get('commands')?.list() ?? []).map((command) => ({
      name: command.name,
      description: command.description,
      ...(command.usage ? { argumentHint: command.usage } : {}),
    }))
    this.editor.setAutocompleteProvider(new ChatCompletion(commands, agent.session.header.cwd))
    this.editor.onSubmit = (text) => this.submit(text)
    this.live.addChild(new Lines((width) => this.pendingLines(width)))
    this.live.addChild(
      new Lines(() =>
        [statusLine(this.theme, this.running, this.frame, this.history.status() ?? this.hint)].filter(Boolean),
      ),
    )
    // The transcript and the live region go above the editor the screen already shows.
    this.tui.children.splice(this.tui.children.indexOf(this.editor), 0, this.transcript, this.live)
    this.refreshGit()
    this.footer = new Lines((width) => footerLines(this.theme, this.footerFacts(), width))
    this.tui.addChild(this.footer)
    this.tui.setFocus(this.editor)
    this.stopKeys = this.tui.addInputListener((data) => this.key(data))
    this.refreshStatus()
    // Esc at an approval: stop the turn as soon as its rejection is decided (serial, before the loop goes on).
    this.stopDecided = ctx.on('approval/decided', (decided) => {
      if (decided.requestId !== this.stopAfterDecision) return
      this.stopAfterDecision = undefined
      void this.agent.cancel('stopped by the person at an approval (Esc)')
    })
    // A language server's cold start takes seconds: say so while it happens.
    const starting = (server: string) => `starting the ${server} language server…`
    this.stopLspEvents = [
      ctx.on('lsp/starting', ({ server }) => {
        this.hint = starting(server)
        this.tui.requestRender()
      }),
      ctx.on('lsp/ready', ({ server }) => {
        if (this.hint === starting(server)) this.hint = undefined
        this.tui.requestRender()
      }),
    ]
    // A subagent's own session is not this chat's: its calls are shown nested under the task call.
    this.stopChildEvents = ctx.sessions.watch((session, event) => {
      if (this.transcript.childEvent(session.id, event)) this.tui.requestRender()
    })
  }

  private get running(): boolean {
    return this.host.statusOf(this.agent.session.id) === 'running'
  }

  /** An event of a resumed session's history: shown, and what the person typed is in the input history. */
  baseline(event: AnySessionEvent): void {
    this.transcript.add(event)
    if (isEvent(event, 'user/message') && !event.data.origin) {
      this.history.add(
        event.data.message.content
          .flatMap((block) => (block.type === 'text' && !contextChip(block.text) ? [block.text] : []))
          .join('\n'),
      )
    }
  }

  /** A committed event of the session (the baseline of a resumed session first). */
  event(event: AnySessionEvent): void {
    this.transcript.add(event)
    if (event.type === 'assistant/message' || event.type === 'turn/end' || event.type === 'compaction/end') {
      this.measure()
    }
    if (event.type === 'turn/end') this.refreshGit()
    this.tui.requestRender()
  }

  /** Status, inbox or mode changed: restart or stop the spinner, re-render the live region. */
  changed(): void {
    if (this.running && !this.spinner) {
      this.spinner = setInterval(() => {
        this.frame++
        this.tui.requestRender()
      }, 120)
      this.spinner.unref()
    } else if (!this.running && this.spinner) {
      clearInterval(this.spinner)
      this.spinner = undefined
    }
    this.tui.requestRender()
  }

  private isClosed = false
  private git: GitFacts | undefined
  /** Cancels a `git status` still running when the chat closes. */
  private readonly gitAbort = new AbortController()

  /** Re-reads the branch (a file read) and, in the background, whether the worktree has changes. */
  private refreshGit(): void {
    const cwd = this.agent.session.header.cwd
    const branch = gitBranch(cwd)
    if (!branch) {
      this.git = undefined
      return
    }
    this.git = {
      branch,
      ...(this.git?.branch === branch && this.git.dirty !== undefined ? { dirty: this.git.dirty } : {}),
    }
    void gitDirty(cwd, this.gitAbort.signal).then((dirty) => {
      if (this.isClosed || this.git?.branch !== branch) return
      this.git = { branch, ...(dirty !== undefined ? { dirty } : {}) }
      this.tui.requestRender()
    })
  }

  close(): void {
    if (this.isClosed) return
    this.isClosed = true
    this.stopChildEvents()
    this.gitAbort.abort()
    for (const stop of this.stopLspEvents) stop()
    this.stopDecided()
    if (this.spinner) clearInterval(this.spinner)
    this.closed()
  }

  /** A line of the chat's own in the transcript (not part of the session). */
  note(text: string): void {
    this.transcript.note(text, this.theme.dim)
    this.tui.requestRender()
  }

  /** Takes this chat's transcript, live region, footer and keys off the screen (a new session follows). */
  detach(): void {
    this.close()
    this.stopKeys()
    for (const child of [this.transcript, this.live, this.footer]) this.tui.removeChild(child)
    this.editor.onSubmit = undefined
  }

  private pendingLines(width: number): string[] {
    const lines: string[] = []
    const approval = this.approval()
    if (approval) lines.push(...approvalLines(this.theme, approval.question, width))
    const question = this.question()
    if (question) lines.push(...questionLines(this.theme, question.question, width))
    const inbox = this.host.inboxOf(this.agent.session.id)
    let queued = 0
    for (const item of [...(inbox?.['next-step'] ?? []), ...(inbox?.['next-turn'] ?? [])]) {
      if (item.kind !== 'steer' && item.kind !== 'followup') continue
      queued++
      const text = textOf(item.message.content).replace(/\s+/g, ' ')
      lines.push(this.theme.dim(`↳ ${item.kind === 'steer' ? 'steering' : 'queued'}: ${text}`))
    }
    for (const image of this.images)
      lines.push(this.theme.accent(`+ ${basename(image)} (attached to the next message)`))
    if (queued > 0 && !this.editor.getText())
      lines.push(
        this.theme.dim(
          this.running
            ? '  Up edits the last queued message'
            : '  Enter sends the queued messages · Up edits the last one · they wait until you send',
        ),
      )
    return lines
  }

  private approval(): Pending<ApprovalQuestion> | undefined {
    return this.host.approvals().find((pending) => pending.question.sessionId === this.agent.session.id)
  }

  private question(): Pending<AskedQuestion> | undefined {
    return this.host.questions()[0]
  }

  private footerFacts() {
    return {
      model: this.model(),
      preset: this.host.presetOf(this.agent.session.id),
      mode: this.host.modeOf(this.agent.session.id),
      ...(this.reading ? { tokens: this.reading.tokens } : {}),
      ...(this.reading?.pressure !== undefined ? { pressure: this.reading.pressure } : {}),
      ...(this.cost !== undefined ? { cost: this.cost } : {}),
      sessionId: this.agent.session.id,
      queued: (this.host.inboxOf(this.agent.session.id)?.['next-turn'] ?? []).length,
      git: this.git,
      statusLine: this.status,
    }
  }

  /** Re-runs the user's status line command (when one is set) with what the footer knows. */
  private refreshStatus(): void {
    const service = this.ctx.get('statusLine')
    if (!service?.command()) return
    const facts = this.footerFacts()
    void service
      .refresh(this.agent, {
        model: facts.model,
        ...(facts.preset ? { preset: facts.preset } : {}),
        ...(facts.mode ? { mode: facts.mode } : {}),
        ...(this.git?.branch ? { gitBranch: this.git.branch } : {}),
        ...(facts.tokens !== undefined ? { tokens: facts.tokens } : {}),
        ...(facts.pressure !== undefined ? { pressure: facts.pressure } : {}),
      })
      .then((state) => {
        this.status = state
        this.tui.requestRender()
      })
  }

  /** `provider:model` the next request uses (the agent's settings resolved as a request resolves them). */
  private model(): string {
    try {
      const resolved = this.ctx.get('llm')?.resolveCall({ ...this.agent.model })
      if (resolved?.model) return `${resolved.provider}:${resolved.model}`
    } catch {
      // An unresolvable setting: show what the agent names.
    }
    const model = this.agent.model.model ?? this.reading?.model ?? 'default model'
    const provider = this.agent.model.provider
    return provider ? `${provider}:${model}` : model
  }

  /** Sends what the person typed while dsh was starting, in order. */
  sendEarly(lines: readonly string[]): void {
    for (const line of lines) this.submit(line)
  }

  /** Re-reads the token meter (after an answer, a turn, a compaction), then the status line. */
  measure(): void {
    this.measureNow()
    this.refreshStatus()
  }

  private measureNow(): void {
    const session = this.agent.session
    const usage = sessionUsage(session.events, session.header.seedLength ?? 0)
    this.cost = usage.requests > 0 ? usageCostText(usage) : undefined
    const meter = this.ctx.get('tokenMeter')
    if (!meter) return
    try {
      const reading = meter.measure(this.agent.session)
      this.reading = {
        tokens: reading.tokens,
        ...(reading.pressure !== undefined ? { pressure: reading.pressure } : {}),
        ...(reading.model ? { model: reading.model } : {}),
      }
    } catch {
      // No model resolved yet: the footer shows no meter rather than failing.
    }
  }

  /** Keys the chat owns before the editor sees them (none while a picker has the keys). */
  private key(data: string): { consume: boolean } | undefined {
    if (this.picking) return undefined
    if (this.history.searching) {
      if (this.history.key(data) === 'submitted') {
        const text = this.editor.getText()
        this.editor.setText('')
        this.submit(text)
      }
      this.tui.requestRender()
      return { consume: true }
    }
    const images = pastedImages(data, this.agent.session.header.cwd)
    if (images) {
      this.images.push(...images)
      this.tui.requestRender()
      return { consume: true }
    }
    if (matchesKey(data, 'up') && !this.editor.getText() && this.recallQueued()) {
      return { consume: true }
    }
    if (matchesKey(data, 'ctrl+r')) {
      this.history.start()
      this.tui.requestRender()
      return { consume: true }
    }
    const approval = this.approval()
    if (approval && !this.editor.getText()) {
      const suggested = approval.question.suggestedRule
      if (suggested && (data === 's' || data === 'r')) {
        const scope = data === 's' ? 'session' : 'user'
        this.host.respond(approval.id, {
          decision: 'allowed-once',
          reason: `allowed by the person, with ${suggested} kept ${scope === 'session' ? 'for this chat' : 'in your settings'}`,
          rule: { text: suggested, scope },
        })
        this.tui.requestRender()
        return { consume: true }
      }
      if (matchesKey(data, 'escape')) {
        // Esc stops: the call is rejected and the turn ends; the model reads why on the next turn.
        // The turn stops once the rejection is decided (see `approval/decided` in the constructor): the log
        // records the rejection and its reason rather than a bare cancellation, and the loop cannot
        // start another step first.
        this.stopAfterDecision = approval.id
        this.host.respond(approval.id, { decision: 'rejected', reason: 'the person stopped the turn (Esc)' })
        this.flash('stopped the turn')
        this.tui.requestRender()
        return { consume: true }
      }
      const decision = data === 'y' ? 'allowed-once' : data === 'a' ? 'session' : data === 'n' ? 'rejected' : undefined
      if (decision) {
        // "For this chat" is a session grant of the approval service, logged with this decision.
        this.host.respond(approval.id, {
          decision: decision === 'session' ? 'allowed-once' : decision,
          ...(decision === 'rejected' ? { reason: 'rejected by the person at the terminal' } : {}),
          ...(decision === 'session' ? { reason: 'allowed for this chat by the person', grant: 'session' } : {}),
        })
        this.tui.requestRender()
        return { consume: true }
      }
    }
    const question = this.question()
    if (question && !this.editor.getText() && /^[1-9]$/.test(data)) {
      const option = question.question.options?.[Number(data) - 1]
      if (option !== undefined) {
        this.host.answerQuestion(question.id, option)
        this.transcript.note(`› ${option}`, this.theme.user)
        this.tui.requestRender()
        return { consume: true }
      }
    }
    if (matchesKey(data, 'escape') && this.running && !this.editor.isShowingAutocomplete()) {
      void this.agent.cancel('cancelled by the person (Esc)')
      this.flash('cancelling the turn…')
      return { consume: true }
    }
    // Esc twice on an empty editor while idle: the rewind picker, as people expect it.
    const doubleEsc = data === '\x1b\x1b'
    if (
      (doubleEsc || matchesKey(data, 'escape')) &&
      !this.running &&
      !this.editor.getText() &&
      !this.editor.isShowingAutocomplete()
    ) {
      if (doubleEsc || Date.now() - this.lastEsc < DOUBLE_PRESS_MS) {
        this.lastEsc = 0
        void this.rewindPicker()
      } else this.lastEsc = Date.now()
      return { consume: true }
    }
    if (matchesKey(data, 'ctrl+c')) {
      if (this.running) {
        // As Esc: the turn stops, what is typed stays.
        void this.agent.cancel('cancelled by the person (Ctrl-C)')
        this.flash('cancelling the turn… (Ctrl-C twice on an empty editor exits)')
      } else if (this.editor.getText() || this.images.length > 0) {
        this.editor.setText('')
        this.images = []
      } else if (Date.now() - this.lastCtrlC < DOUBLE_PRESS_MS) {
        this.close()
      } else {
        this.lastCtrlC = Date.now()
        this.flash('press Ctrl-C again to exit')
      }
      this.tui.requestRender()
      return { consume: true }
    }
    // Enter on an empty editor confirms what a resumed session left queued (the editor ignores it).
    if (matchesKey(data, 'enter') && !this.editor.getText() && !this.running && this.agent.runQueued()) {
      this.tui.requestRender()
      return { consume: true }
    }
    if (matchesKey(data, 'ctrl+d') && !this.editor.getText()) {
      this.close()
      return { consume: true }
    }
    if (matchesKey(data, 'ctrl+o')) {
      this.transcript.toggleReasoning()
      this.transcript.invalidate()
      this.tui.requestRender(true)
      return { consume: true }
    }
    if (matchesKey(data, 'alt+enter') && this.running) {
      const text = this.editor.getText().trim()
      if (text) {
        this.history.add(text)
        this.editor.setText('')
        if (this.host.isCommand(text)) void this.command(text)
        else this.send(this.host.typedText(text), 'followup')
      }
      return { consume: true }
    }
    return undefined
  }

  /**
   * Up on an empty editor while input waits in the inbox: the newest queued (else steering) message is
   * taken out of the inbox (a logged edit) and put in the editor, to change and send again.
   */
  private recallQueued(): boolean {
    const id = this.agent.session.id
    const inbox = this.host.inboxOf(id)
    for (const target of ['next-turn', 'next-step'] as const) {
      const items = inbox?.[target] ?? []
      const index = items.findLastIndex((item) => item.kind === 'steer' || item.kind === 'followup')
      const item = items[index]
      if (!item) continue
      try {
        this.host.agent(id).spliceInbox(target, index, 1)
      } catch (error) {
        // Claimed by a step in the meantime: it is on its way to the model, nothing to edit.
        this.transcript.note(error instanceof Error ? error.message : String(error), this.theme.error)
        return false
      }
      this.editor.setText(textOf(item.message.content))
      this.flash('editing a queued message: Enter sends it, Alt+Enter queues it again')
      return true
    }
    return false
  }

  private flash(hint: string): void {
    this.hint = hint
    this.tui.requestRender()
    setTimeout(() => {
      if (this.hint !== hint) return
      this.hint = undefined
      this.tui.requestRender()
    }, DOUBLE_PRESS_MS).unref()
  }

  /** Enter: answer a waiting question, run a /command, steer the running turn, or start one. */
  private submit(raw: string): void {
    const text = raw.trim()
    if (!text) return
    this.history.add(text)
    const question = this.question()
    const approval = this.approval()
    if (question) {
      this.host.answerQuestion(question.id, text)
      this.transcript.note(`› ${text}`, this.theme.user)
    } else if (approval && !text.startsWith('/')) {
      // Text typed at an approval is the reason for rejecting it; the model reads it and goes on.
      this.host.respond(approval.id, { decision: 'rejected', reason: `rejected by the person: ${text}` })
      this.transcript.note(`✗ rejected: ${text}`, this.theme.warn)
    } else if (this.host.isCommand(text)) {
      // Also while a turn runs: a /command (known or not) is never steering.
      void this.command(text)
    } else {
      this.send(this.host.typedText(text), this.running ? 'steer' : 'followup')
    }
    this.tui.requestRender()
  }

  /** A prompt through the session host, which resolves its `@path` / `@session:` references. */
  private send(text: string, kind: 'followup' | 'steer'): void {
    const attachments = this.images.map((path) => ({ path, name: basename(path) }))
    this.images = []
    void this.host
      .prompt(this.agent.session.id, { text, ...(attachments.length > 0 ? { attachments } : {}) }, { kind })
      .catch((error: unknown) => {
        this.transcript.note(error instanceof Error ? error.message : String(error), this.theme.error)
        this.tui.requestRender()
      })
  }

  /**
   * The picker `/model` opens: arrow keys move, Enter runs `/model NAME` (logged as typing it would
   * be), Esc leaves the model as it is.
   */
  private async pickModel(current: string, usable: string[]): Promise<void> {
    this.transcript.note(`model: ${current}`, this.theme.dim)
    this.picking = true
    const chosen = await pick(
      { tui: this.tui, theme: this.theme, editor: this.editor },
      {
        title: 'Choose a model (↑↓ move, Enter chooses, Esc keeps the current one)',
        items: usable.map((name) => ({
          value: name,
          label: name,
          ...(name === current ? { description: 'current' } : {}),
        })),
        selected: current,
      },
    ).finally(() => {
      this.picking = false
    })
    if (chosen === undefined) {
      this.transcript.note(`model unchanged: ${current}`, this.theme.dim)
      this.tui.requestRender()
      return
    }
    return this.command(`/model ${chosen}`)
  }

  /** The rewind picker: a message (what its turn changed), then what goes back. Esc cancels at each step. */
  private async rewindPicker(): Promise<void> {
    if (this.picking) return
    if (this.running) {
      this.transcript.note('a turn is running; stop it first (Esc), then rewind', this.theme.error)
      this.tui.requestRender()
      return
    }
    let points: RewindPoint[]
    try {
      points = await this.host.rewindPoints(this.agent.session.id)
    } catch (error) {
      this.transcript.note(error instanceof Error ? error.message : String(error), this.theme.error)
      return
    }
    if (points.length === 0) {
      this.transcript.note('nothing to rewind to yet: no message in this session', this.theme.dim)
      this.tui.requestRender()
      return
    }
    const screen = { tui: this.tui, theme: this.theme, editor: this.editor }
    this.picking = true
    try {
      const chosen = await pick(screen, {
        title: 'Rewind to before which message? (↑↓ move, Enter chooses, Esc cancels)',
        items: [...points].reverse().map((point) => ({ value: String(point.number), label: pointLine(point).trim() })),
        chosen: (value) => (value ? `rewind: message ${value}` : 'rewind cancelled'),
      })
      if (chosen === undefined) return
      const point = points.find((candidate) => String(candidate.number) === chosen)
      const modes = point?.snapshot
        ? [
            { value: 'both', label: 'Conversation and files' },
            { value: 'conversation', label: 'Conversation only (the files stay as they are)' },
            { value: 'files', label: 'Files only (the conversation goes on)' },
          ]
        : [{ value: 'conversation', label: 'Conversation only (no checkpoint of the files for this message)' }]
      const mode = await pick(screen, {
        title: `What goes back to before message ${chosen}? (Esc cancels)`,
        items: modes,
        chosen: (value) => (value ? `rewind message ${chosen}: ${value}` : 'rewind cancelled'),
      })
      if (mode === undefined) return
      this.picking = false
      await this.rewind(Number(chosen), mode as RewindMode, false)
    } finally {
      this.picking = false
      this.tui.requestRender()
    }
  }

  /**
   * Rewinds through the host. Files changed by someone else are listed and overwritten only when the
   * person says so; a conversation rewind switches the chat to the new session with the message back
   * in the editor.
   */
  private async rewind(point: number, mode: RewindMode, overwrite: boolean, known?: string[]): Promise<void> {
    try {
      // `known`: a typed `/rewind N files` already found the conflicts; ask about them directly.
      const result: Partial<HostRewind> = known
        ? { files: { ...NO_FILES, code: 'REWIND_CONFLICT', conflicts: known } }
        : await this.host.rewind(this.agent.session.id, { point, mode, overwrite })
      const files = result.files
      if (files?.code === 'REWIND_CONFLICT') {
        this.transcript.note(
          `changed by someone else since this session last saw them:\n${files.conflicts.map((path) => `  ${path}`).join('\n')}`,
          this.theme.error,
        )
        this.picking = true
        const answer = await pick(
          { tui: this.tui, theme: this.theme, editor: this.editor },
          {
            title: 'Overwrite them too? (Esc: no, nothing changes)',
            items: [
              { value: 'no', label: 'No: change nothing' },
              { value: 'yes', label: 'Yes: write them back as they were' },
            ],
            chosen: (value) => (value === 'yes' ? 'overwriting them' : 'nothing was changed'),
          },
        ).finally(() => {
          this.picking = false
        })
        if (answer === 'yes') return this.rewind(point, mode, true)
        return
      }
      if (files)
        this.transcript.note(
          files.text,
          files.ok || files.code === 'REWIND_NOTHING' ? this.theme.dim : this.theme.error,
        )
      if (result.previousSessionId && result.sessionId) {
        this.next = 'switch'
        this.switchTo = { sessionId: result.sessionId, text: result.text ?? '', previous: result.previousSessionId }
        this.close()
      }
    } catch (error) {
      this.transcript.note(error instanceof Error ? error.message : String(error), this.theme.error)
    } finally {
      this.measure()
      this.tui.requestRender()
    }
  }

  private async command(line: string): Promise<void> {
    this.transcript.note(`› ${line}`, this.theme.user)
    this.tui.requestRender()
    try {
      const outcome = await this.host.command(this.agent.session.id, line)
      const action = commandAction(outcome)
      if (action === 'exit') return this.close()
      if (action === 'new-session') {
        this.next = 'new-session'
        return this.close()
      }
      if (action === 'rewind') {
        const request = rewindRequest(outcome)
        if (request) return await this.rewind(request.point, request.mode, request.overwrite)
      }
      if (outcome.ok && outcome.name === 'rewind' && !line.trim().includes(' ')) return await this.rewindPicker()
      const conflict = rewindConflict(outcome)
      if (conflict) return await this.rewind(conflict.point, 'files', false, conflict.conflicts)
      const choices = modelChoices(outcome)
      if (choices) return await this.pickModel(choices.current, choices.usable)
      const text = outcome.text || (outcome.ok ? `/${outcome.name} done` : `/${outcome.name} failed`)
      this.transcript.note(
        outcome.ok ? text : `${outcome.code ?? 'failed'}: ${text}`,
        outcome.ok ? this.theme.dim : this.theme.error,
      )
    } catch (error) {
      this.transcript.note(error instanceof Error ? error.message : String(error), this.theme.error)
    }
    this.measure()
    this.tui.requestRender()
  }
}

const NO_FILES: FilesOutcome = {
  ok: false,
  kind: 'rewind',
  text: '',
  written: [],
  deleted: [],
  conflicts: [],
  overwritten: [],
  notCaptured: [],
  subagents: [],
}

/** A files rewind the command refused (someone else changed files): the point and the files. */
function rewindConflict(outcome: CommandOutcome): { point: number; conflicts: string[] } | undefined {
  const data = outcome.name === 'rewind' ? outcome.data : undefined
  if (!data || typeof data !== 'object' || Array.isArray(data) || data.code !== 'REWIND_CONFLICT') return undefined
  const { point, conflicts } = data
  if (typeof point !== 'number' || !Array.isArray(conflicts)) return undefined
  return { point, conflicts: conflicts.filter((path): path is string => typeof path === 'string') }
}

/** `/rewind N mode`: what the command asks the surface to do. */
function rewindRequest(outcome: CommandOutcome): { point: number; mode: RewindMode; overwrite: boolean } | undefined {
  const data = outcome.data
  if (!data || typeof data !== 'object' || Array.isArray(data)) return undefined
  const { point, mode, overwrite } = data
  if (typeof point !== 'number' || (mode !== 'both' && mode !== 'conversation' && mode !== 'files')) return undefined
  return { point, mode, overwrite: overwrite === true }
}

/** `/model` without a name: the current model and the usable ones (undefined for any other outcome or none usable). */
function modelChoices(outcome: CommandOutcome): { current: string; usable: string[] } | undefined {
  const data = outcome.ok && outcome.name === 'model' ? outcome.data : undefined
  if (!data || typeof data !== 'object' || Array.isArray(data)) return undefined
  const { model, usable } = data
  if (typeof model !== 'string' || !Array.isArray(usable) || usable.length === 0) return undefined
  return { current: model, usable: usable.filter((name): name is string => typeof name === 'string') }
}

/** The text blocks of a message, joined. */
function textOf(content: readonly { type: string; text?: string }[]): string {
  return content.flatMap((block) => (block.type === 'text' && block.text ? [block.text] : [])).join('\n')
}
