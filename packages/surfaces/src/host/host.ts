// One client's view of the process's sessions: the agents it attached (one per session), the
// questions waiting for it, its event subscriptions. A surface (web, RPC, ACP, headless, a terminal UI)
// creates one host per client scope and maps it onto its wire; the host never knows the wire. The
// optional concerns (jobs, modes, presets, /commands, held answers) live in their own helpers; the
// host keeps one method per operation so every wire maps the same names.
import { randomUUID } from 'node:crypto'
import { type Agent, type InboxReceipt, type InboxState, releaseAgent, releaseAgents } from '@dsh/agent'
import type { ApprovalAnswer, ApprovalQuestion } from '@dsh/agent/approval'
import type {} from '@dsh/composition'
import type {} from '@dsh/context/title'
import { type AskedQuestion, applyModelChoice, type CommandOutcome, literalSlash } from '@dsh/interaction'
import type { FilesOutcome, RewindMode, RewindPoint, RewindService } from '@dsh/interaction/rewind'
import { type Context, HarnessError } from '@dsh/kernel'
import { type Session, type SessionStep, sessionSteps } from '@dsh/session'
import type {} from '@dsh/session/store'
import type {} from '@dsh/session/store/coordinator'
import type {} from '@dsh/session/store/query'
import type { JobInfo, JobOutputPeek } from '@dsh/world/jobs'
import type { StatusLineState } from '../statusline/index.js'
import type { HostAccess } from './access.js'
import { HostAnswers } from './answers.js'
import { type Attached, disposeResources } from './attached.js'
import { HostCommands } from './commands.js'
import { type BranchSummary, summarizeBranch } from './compare.js'
import { type ExportFormat, exportSession } from './export.js'
import { HostJobs } from './jobs.js'
import { HostModes } from './modes.js'
import type { AttachOptions, CreateOptions, HostedStatus, SessionHostListeners, SessionHostOptions } from './options.js'
import type { Pending } from './pending.js'
import { HostPresets, type PresetSummary } from './presets.js'
import { composePrompt, type PromptInput } from './prompt-input.js'
import { type RemoveReport, removeSessions } from './remove.js'
import { type EventSink, type SessionSubscription, Subscriptions } from './subscriptions.js'
import { type HostedSession, mergeSessionList } from './summaries.js'
import { checkTitle } from './title.js'
import { type SessionUsageView, statusLineOf, usageView } from './usage.js'

/** What `SessionHost.rewind` did. */
export interface HostRewind {
  /** The session that goes on: the same one (files), or the conversation fork. */
  sessionId: string
  /** The session rewound, when `sessionId` is a new fork of it. */
  previousSessionId?: string
  point: number
  /** The message given back to edit (conversation and both). */
  text?: string
  /** What the files rewind did, or why it changed nothing (`REWIND_CONFLICT`: `conflicts` lists them). */
  files?: FilesOutcome
}

const RESUMABLE_ONLY = 'this profile has no session persistence row; sessions are not durable'

export class SessionHost {
  private readonly attachedSessions = new Map<string, Attached>()
  /** Resumes in progress, by session id (two resumes of one session share one agent). */
  private readonly resuming = new Map<string, Promise<Agent>>()
  /** Every attach in progress (close waits for them). */
  private readonly attaching = new Set<Promise<unknown>>()
  /** Ids of agents this host created, recorded before creation so `agent/created` can tell. */
  private readonly ownAgents = new Set<string>()
  private readonly answers: HostAnswers
  private readonly jobControl: HostJobs
  private readonly modeControl: HostModes
  private readonly presetControl: HostPresets
  private readonly commands: HostCommands
  private readonly subscriptions = new Subscriptions()
  private readonly disposers: Array<() => void> = []
  private readonly listeners: SessionHostListeners
  private readonly log: (line: string) => void
  private closing: Promise<void> | undefined
  readonly cwd: string

  constructor(
    private readonly ctx: Context,
    private readonly options: SessionHostOptions,
  ) {
    this.listeners = options.on ?? {}
    this.log = options.log ?? (() => {})
    this.cwd = options.cwd ?? ctx.get('launcher')?.config.cwd ?? process.cwd()
    this.answers = new HostAnswers(ctx, {
      approvals: options.answerApprovals ?? true,
      questions: options.answerQuestions !== false,
      approvalRequested: (pending) => this.listeners.approvalRequested?.(pending),
      approvalSettled: (id, answer) => this.listeners.approvalSettled?.(id, answer),
      questionRequested: (pending) => this.listeners.questionRequested?.(pending),
      questionSettled: (id, answer) => this.listeners.questionSettled?.(id, answer),
    })
    const access: HostAccess = {
      ctx,
      agent: (sessionId) => this.agent(sessionId),
      attached: (sessionId) => this.attached(sessionId),
      changed: (sessionId) => this.listeners.stateChanged?.(sessionId),
    }
    this.jobControl = new HostJobs(access)
    this.modeControl = new HostModes(access)
    this.presetControl = new HostPresets(access)
    this.commands = new HostCommands(access)
    this.listen()
  }

  private listen(): void {
    const ctx = this.ctx
    const changed = (sessionId: string) => queueMicrotask(() => this.listeners.stateChanged?.(sessionId))
    this.disposers.push(
      ctx.sessions.watch((session, event) => {
        this.subscriptions.deliver(session)
        // The splice is logged before the inbox changes in memory; a tool result may start a job.
        if (event.type === 'agent/inbox/spliced' || event.type === 'tool/result') changed(session.id)
        if (event.type === 'turn/end' || event.type === 'user/message') this.listeners.listChanged?.()
      }),
      ctx.on('jobs/finished', (job) => {
        if (job.owner.sessionId) this.listeners.stateChanged?.(job.owner.sessionId)
      }),
      ctx.on('agent/phase', (agent) => {
        if (this.attachedSessions.get(agent.session.id)?.agent !== agent) return
        queueMicrotask(() => {
          this.listeners.stateChanged?.(agent.session.id)
          this.listeners.listChanged?.()
        })
      }),
    )
    this.disposers.push(...this.answers.register())
  }

  /** Whether this host holds `ask_user` questions (a `ctx.userQuestions` row is loaded and it answers). */
  get answersQuestions(): boolean {
    return this.answers.holdsQuestions
  }

  // ---- sessions ----

  /** Creates a fresh session in `options.cwd` (default the host's cwd) with an agent attached. */
  create(options: CreateOptions = {}): Promise<Agent> {
    return this.attach(undefined, options.cwd ?? this.cwd, options)
  }

  /**
   * The agent of a session: the attached one, or a new one on the session cold-resumed from
   * persistence. Throws `SESSION_BUSY` when another owner drives it in this process,
   * `NO_PERSISTENCE`, and the store's codes (`SESSION_NOT_FOUND`, `SESSION_LEASED`...).
   */
  async resume(sessionId: string, options: AttachOptions = {}): Promise<Agent> {
    const attached = this.attachedSessions.get(sessionId)
    if (attached) return attached.agent
    const pending = this.resuming.get(sessionId)
    if (pending) return pending
    if (this.ctx.sessions.get(sessionId)) {
      throw new HarnessError(
        'SESSION_BUSY',
        `session ${sessionId} is live in this process but not driven by ${this.options.name}`,
        { sessionId },
      )
    }
    const resuming = (async () => {
      const session = await this.persistence().resume(sessionId)
      try {
        return await this.attach(session, undefined, options)
      } catch (error) {
        this.ctx.sessions.close(session)
        throw error
      }
    })()
    this.resuming.set(sessionId, resuming)
    try {
      return await resuming
    } finally {
      this.resuming.delete(sessionId)
    }
  }

  /** Forks a session (live or durable) before seq `at` (default: all of it) and attaches the child. */
  async fork(sessionId: string, at?: number, options: AttachOptions = {}): Promise<Agent> {
    const live = this.attachedSessions.get(sessionId)?.agent.session
    const source = live ?? (await this.persistence().read(sessionId))
    const child = this.ctx.sessions.fork(source, at)
    try {
      return await this.attach(child, undefined, options)
    } catch (error) {
      this.ctx.sessions.close(child)
      throw error
    }
  }

  /** A session's usage and cost folded from its log, and how full its next request is; live or stored. */
  async usage(sessionId: string): Promise<SessionUsageView> {
    const live = this.attachedSessions.get(sessionId)?.agent.session
    return usageView(this.ctx, live ?? (await this.persistence().read(sessionId)))
  }

  /**
   * A fork beside the session it was forked from, each from the fork point on (what-if branches).
   * `NOT_A_FORK` for a session that was not forked.
   */
  async compare(sessionId: string): Promise<{ from: number; original: BranchSummary; fork: BranchSummary }> {
    const read = async (id: string) =>
      this.attachedSessions.get(id)?.agent.session ?? (await this.persistence().read(id))
    const fork = await read(sessionId)
    const parent = fork.header.parentSession
    const from = fork.header.seedLength
    if (!parent || from === undefined)
      throw new HarnessError('NOT_A_FORK', `session ${sessionId} was not forked from another; nothing to compare`, {
        sessionId,
      })
    const original = await read(parent)
    return {
      from,
      original: summarizeBranch(parent, original.events, from),
      fork: summarizeBranch(sessionId, fork.events, from),
    }
  }

  /** A session as it is now: the attached one, or read from the store. */
  async read(sessionId: string): Promise<Session> {
    return this.attachedSessions.get(sessionId)?.agent.session ?? (await this.persistence().read(sessionId))
  }

  /** The bytes of an attachment blob, or undefined when there is no attachments row or no such blob. */
  async blob(ref: string): Promise<Uint8Array | undefined> {
    return this.ctx
      .get('attachments')
      ?.get(ref)
      .catch(() => undefined)
  }

  /** A session's model requests as steps (each request as sent, its answer, calls and results); live or stored. */
  async steps(sessionId: string): Promise<SessionStep[]> {
    const live = this.attachedSessions.get(sessionId)?.agent.session
    const session = live ?? (await this.persistence().read(sessionId))
    return sessionSteps(session.events)
  }

  /** The user's status line (`statusline.command`) for an attached session; `configured: false` without one. */
  statusLine(sessionId: string): Promise<StatusLineState & { configured: boolean }> {
    const preset = this.presetOf(sessionId)
    const mode = this.modeOf(sessionId)
    return statusLineOf(this.ctx, this.agent(sessionId), {
      ...(preset ? { preset } : {}),
      ...(mode ? { mode } : {}),
    })
  }

  /** The messages of a session a rewind can go back to, with what each turn changed (`/rewind` lists them). */
  async rewindPoints(sessionId: string): Promise<RewindPoint[]> {
    const live = this.attachedSessions.get(sessionId)?.agent.session
    const session = live ?? (await this.persistence().read(sessionId))
    return this.rewindService().points(session)
  }

  /**
   * Rewinds an attached session to point `point` (a user message number): `files` writes the
   * workspace back (the same session goes on), `conversation` forks before the message (attached and
   * returned; the original is kept), `both` does the two, the files first. A refused files rewind
   * (files changed by someone else, without `overwrite`) changes nothing and forks nothing. `cwd` puts
   * a conversation fork in another workspace (a what-if in a scratch copy).
   */
  async rewind(
    sessionId: string,
    request: { point: number; mode: RewindMode; overwrite?: boolean; cwd?: string },
    options: AttachOptions = {},
  ): Promise<HostRewind> {
    const agent = this.agent(sessionId)
    if (agent.phase !== 'idle')
      throw new HarnessError(
        'SESSION_BUSY',
        `session ${sessionId} is running a turn; stop it before rewinding (files must not change under a running turn)`,
        { sessionId },
      )
    const rewind = this.rewindService()
    const point = rewind.point(agent.session, request.point)
    let files: FilesOutcome | undefined
    if (request.mode !== 'conversation') {
      files = await rewind.files(agent.session, point.number, { overwrite: request.overwrite === true })
      if (!files.ok && files.code === 'REWIND_CONFLICT') return { sessionId, point: point.number, files }
    }
    if (request.mode === 'files') return { sessionId, point: point.number, ...(files ? { files } : {}) }
    const fork = rewind.fork(agent.session, point.number, request.cwd === undefined ? {} : { cwd: request.cwd })
    if (files) rewind.record(fork.child, agent.session, files)
    try {
      const child = await this.attach(fork.child, undefined, options)
      await this.ctx.sessions.flush(child.session)
      return {
        sessionId: child.session.id,
        previousSessionId: sessionId,
        point: point.number,
        text: fork.text,
        ...(files ? { files } : {}),
      }
    } catch (error) {
      this.ctx.sessions.close(fork.child)
      throw error
    }
  }

  private rewindService(): RewindService {
    const rewind = this.ctx.get('rewind')
    if (!rewind)
      throw new HarnessError('NOT_AVAILABLE', 'rewind needs the rewind row (@dsh/interaction/rewind), which is off', {})
    return rewind
  }

  /** The attached agent of a session; throws `SESSION_NOT_ATTACHED` (create or resume it first). */
  agent(sessionId: string): Agent {
    const attached = this.attachedSessions.get(sessionId)
    if (!attached) {
      throw new HarnessError(
        'SESSION_NOT_ATTACHED',
        `session ${sessionId} is not open on ${this.options.name}; create or resume it first`,
        { sessionId },
      )
    }
    return attached.agent
  }

  /**
   * Queues a person's prompt on an attached session: its attachments stored and its `@path` /
   * `@session:ID` references resolved into one user message (see prompt-input.ts), then `followup`
   * (the next turn) or `steer` (the running turn). Every surface sends prompts through here.
   */
  async prompt(
    sessionId: string,
    input: PromptInput,
    options: { kind?: 'followup' | 'steer'; allowPaths?: boolean } = {},
  ): Promise<InboxReceipt> {
    const agent = this.agent(sessionId)
    const message = await composePrompt(this.ctx, input, {
      cwd: agent.session.header.cwd,
      sessionId,
      ...(options.allowPaths === undefined ? {} : { allowPaths: options.allowPaths }),
    })
    return options.kind === 'steer' ? agent.steer(message) : agent.followup(message)
  }

  /** The attached agent of a session, if any. */
  attached(sessionId: string): Agent | undefined {
    return this.attachedSessions.get(sessionId)?.agent
  }

  /** The attached agents. */
  agents(): Agent[] {
    return [...this.attachedSessions.values()].map((attached) => attached.agent)
  }

  /** Whether this host created the agent (a root agent; any other is another owner's or a subagent). */
  owns(agentId: string): boolean {
    return this.ownAgents.has(agentId)
  }

  /**
   * Lets go of a session: cancels its agent, flushes, disposes it, closes a session the host restored,
   * then runs the session's resource disposers. A session that is not attached is a no-op.
   */
  async release(sessionId: string, reason = this.options.closeReason): Promise<void> {
    const attached = this.attachedSessions.get(sessionId)
    if (!attached) return
    this.attachedSessions.delete(sessionId)
    await releaseAgent(this.ctx.sessions, attached.agent, {
      reason,
      ownsSession: attached.ownsSession,
      onError: (error, step) => this.log(`${step} of session ${sessionId} failed: ${String(error)}`),
    })
    disposeResources(sessionId, attached, this.log)
    this.listeners.listChanged?.()
  }

  /** Durable sessions and attached ones, newest first; attached rows carry their live counts. */
  async list(): Promise<HostedSession[]> {
    const query = this.ctx.get('sessionQuery')
    const durable = query ? await query.list() : []
    return mergeSessionList(durable, this.agents(), (sessionId) => this.statusOf(sessionId))
  }

  /**
   * Whether other processes write the same sessions (the store keeps leases itself, e.g. PostgreSQL
   * shared by many hosts): their creations and leases change the list without this host knowing, so
   * a surface that shows the list re-reads it now and then.
   */
  get sharedStore(): boolean {
    return typeof this.ctx.get('sessionStore')?.lease === 'function'
  }

  /** The most recently updated session whose cwd is `cwd`, durable or attached. */
  async latest(cwd: string): Promise<HostedSession | undefined> {
    return (await this.list()).find((session) => session.cwd === cwd)
  }

  /**
   * Names a session durably: a `session/title` event (`by: 'user'`) in its log, which every list reads
   * instead of the first prompt (and which keeps the model from titling it later). Resumes the session
   * when it is not attached; needs the `session-title` row, which declares the event.
   */
  async rename(sessionId: string, title: string): Promise<string> {
    const clean = checkTitle(this.ctx, title)
    const session = (await this.resume(sessionId)).session
    session.append('session/title', { title: clean, by: 'user' }, { ignorable: true })
    await this.ctx.sessions.flush(session)
    this.listeners.listChanged?.()
    return clean
  }

  /** Deletes a durable session (released first when this host drives it); see `removeSessions`. */
  async remove(sessionId: string): Promise<RemoveReport> {
    await this.release(sessionId, 'the session was deleted')
    // Closing a session releases its lease asynchronously: wait for it, or the delete below would
    // find this very process holding the session (SESSION_LEASED naming our own pid).
    await this.ctx.get('sessionPersistence')?.closed(sessionId)
    const report = await removeSessions(this.ctx, [sessionId])
    this.listeners.listChanged?.()
    return report
  }

  /** A session as a file (`exportLines`): the live log when this host drives it, else the durable one. */
  async export(sessionId: string, format: ExportFormat): Promise<string[]> {
    return exportSession(this.ctx, this.attachedSessions.get(sessionId)?.agent.session ?? sessionId, format)
  }

  private async attach(session: Session | undefined, cwd: string | undefined, options: AttachOptions): Promise<Agent> {
    if (this.closing) {
      throw new HarnessError('SESSION_HOST_CLOSING', `${this.options.name} is shutting down`, {})
    }
    const attaching = this.attachNow(session, cwd, options)
    this.attaching.add(attaching)
    try {
      return await attaching
    } finally {
      this.attaching.delete(attaching)
    }
  }

  private async attachNow(session: Session | undefined, cwd: string | undefined, options: AttachOptions) {
    const id = randomUUID()
    this.ownAgents.add(id)
    let agent: Agent
    try {
      agent = await this.ctx.agents.create({
        id,
        session,
        cwd,
        ...(options.model ? { model: options.model } : {}),
        ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
        ...(options.maxCost !== undefined ? { maxCost: options.maxCost } : {}),
        ...(options.preset !== undefined ? { preset: options.preset } : {}),
      })
    } catch (error) {
      this.ownAgents.delete(id)
      throw error
    }
    // The session's logged model choice is the agent's (a model this attach names becomes the choice).
    applyModelChoice(agent, options.model)
    const attached: Attached = { agent, ownsSession: session !== undefined, resources: [] }
    if (options.setup) {
      try {
        const dispose = await options.setup(agent)
        if (dispose) attached.resources.push(dispose)
      } catch (error) {
        // The caller closes a restored session; the agent closes one it created.
        await releaseAgent(this.ctx.sessions, agent, { reason: 'session setup failed', ownsSession: false })
        throw error
      }
    }
    this.attachedSessions.set(agent.session.id, attached)
    // A client that followed the durable copy (the session was open elsewhere) gets what the log
    // gained since, and the live status, now that the session is ours.
    this.subscriptions.deliver(agent.session)
    this.listeners.stateChanged?.(agent.session.id)
    this.listeners.listChanged?.()
    return agent
  }

  /** Whether sessions outlive the process (a persistence row is loaded): only then can one be resumed. */
  get persistent(): boolean {
    return this.ctx.get('sessionPersistence') !== undefined
  }

  /** The durability barrier of an attached session: true once its events are stored (false: no backend). */
  flush(sessionId: string): Promise<boolean> {
    return this.ctx.sessions.flush(this.agent(sessionId).session)
  }

  private persistence() {
    const persistence = this.ctx.get('sessionPersistence')
    if (!persistence) throw new HarnessError('NO_PERSISTENCE', RESUMABLE_ONLY, {})
    return persistence
  }

  // ---- per-session state ----

  statusOf(sessionId: string): HostedStatus {
    const agent = this.attachedSessions.get(sessionId)?.agent
    if (!agent || agent.disposed) return 'detached'
    return agent.phase === 'idle' ? 'idle' : 'running'
  }

  /** The queued input of the session's attached agent (undefined when none is attached). */
  inboxOf(sessionId: string): InboxState | undefined {
    return this.attachedSessions.get(sessionId)?.agent.inbox()
  }

  // ---- helpers (each concern lives in its own file; these keep the host's one surface-facing API) ----

  /** The background jobs of the session's attached agent (needs a `ctx.jobs` row); see `HostJobs`. */
  jobsOf(sessionId: string): JobInfo[] {
    return this.jobControl.of(sessionId)
  }

  /** A peek at a job's output for a person (the model's cursor stays). See `HostJobs.output`. */
  jobOutput(sessionId: string, jobId: string, from: number, maxBytes?: number): JobOutputPeek {
    return this.jobControl.output(sessionId, jobId, from, maxBytes)
  }

  killJob(sessionId: string, jobId: string): Promise<void> {
    return this.jobControl.kill(sessionId, jobId)
  }

  /** The session's permission mode, when a sandbox policy row is loaded; see `HostModes`. */
  modeOf(sessionId: string): string | undefined {
    return this.modeControl.of(sessionId)
  }

  modes(): string[] {
    return this.modeControl.list()
  }

  /** Whether `mode` would widen what the session may do (see `HostModes.widens`). */
  widensMode(sessionId: string, mode: string): boolean {
    return this.modeControl.widens(sessionId, mode)
  }

  /** Whether the /command `line` widens the session (`/permissions danger-full-access`, `never`, `allow RULE`). */
  commandWidens(sessionId: string, line: string): boolean {
    return this.modeControl.commandWidens(sessionId, line)
  }

  setMode(sessionId: string, mode: string, options: { network?: string } = {}): string {
    return this.modeControl.set(sessionId, mode, options)
  }

  /** The presets a new session in `cwd` (default the host's) can take; see `HostPresets`. */
  presets(cwd = this.cwd): Promise<PresetSummary[]> {
    return this.presetControl.list(cwd)
  }

  defaultPreset(): string | undefined {
    return this.presetControl.defaultName()
  }

  presetOf(sessionId: string): string | undefined {
    return this.presetControl.of(sessionId)
  }

  presetLocked(sessionId: string): boolean {
    return this.presetControl.locked(sessionId)
  }

  setPreset(sessionId: string, name: string): Promise<string> {
    return this.presetControl.set(sessionId, name)
  }

  /** Whether `line` is a human /command (known or not); see `HostCommands`. */
  isCommand(line: string): boolean {
    return this.commands.recognizes(line)
  }

  /** A typed line as the model gets it: `//x` and `\\/x` lose the escape (see `literalSlash`). */
  typedText(line: string): string {
    return literalSlash(line) ?? line
  }

  command(sessionId: string, line: string, signal?: AbortSignal): Promise<CommandOutcome> {
    return this.commands.run(sessionId, line, signal)
  }

  // ---- events ----

  /**
   * Subscribes to a session's committed events from `since`: the baseline (`events`) is cut in the
   * same tick as the registration, then `sink` gets every later event once, in seq order. A session
   * that is not live is read from the store; it delivers once something attaches it.
   */
  async subscribe(sessionId: string, since: number, sink: EventSink): Promise<SessionSubscription> {
    let session = this.ctx.sessions.get(sessionId)
    if (!session) {
      const query = this.ctx.get('sessionQuery')
      if (!query) throw new HarnessError('NO_PERSISTENCE', 'this profile has no session query row', {})
      const read = await query.read(sessionId)
      session = this.ctx.sessions.get(sessionId) ?? read
    }
    return this.subscriptions.add(session, since, sink)
  }

  // ---- approvals and questions (see `HostAnswers`) ----

  approvals(): Pending<ApprovalQuestion>[] {
    return this.answers.pendingApprovals()
  }

  /** Answers a pending approval; the first answer wins. Throws `APPROVAL_NOT_FOUND`. */
  respond(requestId: string, answer: ApprovalAnswer): void {
    this.answers.respond(requestId, answer)
  }

  questions(): Pending<AskedQuestion>[] {
    return this.answers.pendingQuestions()
  }

  /** Answers a pending `ask_user` question; the first answer wins. Throws `QUESTION_NOT_FOUND`. */
  answerQuestion(questionId: string, answer: string): void {
    this.answers.answer(questionId, answer)
  }

  // ---- teardown ----

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.closing !== undefined
  }

  /**
   * Cancels pending questions, waits for attaches in flight, releases every attached session (cancel,
   * flush, dispose, close), stops subscriptions and listeners. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.answers.cancelAll(this.options.closeReason)
      await Promise.allSettled([...this.attaching])
      const attached = [...this.attachedSessions.entries()]
      this.attachedSessions.clear()
      await releaseAgents(
        this.ctx.sessions,
        attached.map(([, entry]) => entry),
        { reason: this.options.closeReason, log: this.log },
      )
      for (const [sessionId, entry] of attached) disposeResources(sessionId, entry, this.log)
      this.subscriptions.clear()
      for (const dispose of this.disposers.splice(0).reverse()) dispose()
    })()
    return this.closing
  }
}
