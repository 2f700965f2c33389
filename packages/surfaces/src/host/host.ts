// One client's view of the process's sessions: the agents it attached (one per session), the
// questions waiting for it, its event subscriptions. A surface (web, RPC, ACP, headless, a terminal UI)
// creates one host per client scope and maps it onto its wire; the host never knows the wire.
import { randomUUID } from 'node:crypto'
import { type Agent, type InboxReceipt, type InboxState, releaseAgent, releaseAgents } from '@dsh/agent'
import type { ApprovalAnswer, ApprovalQuestion } from '@dsh/agent/approval'
import type {} from '@dsh/composition'
import type {} from '@dsh/context/title'
import type { AskedQuestion, CommandOutcome, UserAnswer } from '@dsh/interaction'
import { type Context, HarnessError } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import { hasOwnTurn, type PresetOrigin } from '@dsh/presets'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session/store'
import type {} from '@dsh/session/store/coordinator'
import type {} from '@dsh/session/store/query'
import type { JobInfo, JobOutputPeek } from '@dsh/world/jobs'
import type {} from '@dsh/world/sandbox'
import { type ExportFormat, exportLines } from './export.js'
import { type Pending, PendingRegistry } from './pending.js'
import { composePrompt, type PromptInput } from './prompt-input.js'
import { type RemoveReport, removeSessions } from './remove.js'
import { type EventSink, type SessionSubscription, Subscriptions } from './subscriptions.js'
import { type HostedSession, mergeSessionList } from './summaries.js'

/** A preset as a client's picker shows it. */
export interface PresetSummary {
  name: string
  description: string
  /** Where it was found: `project`, `user`, `extra` or `shipped`. */
  origin: PresetOrigin
}

/** `detached`: no agent of this host drives the session. */
export type HostedStatus = 'detached' | 'idle' | 'running'

/** How a held `ask_user` question ends: the person answered, or the turn or the host went away. */
export type QuestionOutcome = Extract<UserAnswer, { status: 'answered' | 'cancelled' }>

/** Something to undo when a session is released (a per-session MCP client, a temp directory...). */
export type Disposer = () => unknown

export interface AttachOptions {
  model?: Partial<LlmCallConfig>
  /**
   * The session's preset (`@dsh/presets`). `create`: recorded in the new session (default: the presets
   * row's default). `resume` / `fork`: the session keeps its recorded preset; naming another one is
   * refused with `PRESET_LOCKED` once the session has turns of its own. Unknown: `PRESET_NOT_FOUND`.
   */
  preset?: string
  /** Bounds the agent's turns (a turn that reaches it ends `blocked`). */
  maxSteps?: number
  /**
   * Runs once the agent exists, before anyone else can reach it through the host: attach per-session
   * resources here. The returned disposer runs when the session is released or the host closes. A
   * throw releases the agent (and closes a restored session) and rejects the attach.
   */
  setup?: (agent: Agent) => undefined | Disposer | Promise<undefined | Disposer>
}

export interface CreateOptions extends AttachOptions {
  /** Working directory of the new session (default: the host's `cwd`). */
  cwd?: string
}

/** What the host tells its surface. Every callback is optional; none may throw. */
export interface SessionHostListeners {
  approvalRequested?(pending: Pending<ApprovalQuestion>): void
  approvalSettled?(requestId: string, answer: ApprovalAnswer): void
  questionRequested?(pending: Pending<AskedQuestion>): void
  questionSettled?(questionId: string, answer: QuestionOutcome): void
  /** A session's status, inbox, jobs or mode may have changed (called a microtask after the cause). */
  stateChanged?(sessionId: string): void
  /** The session list may have changed (attach, release, a phase change, a turn ended, a user message). */
  listChanged?(): void
}

export interface SessionHostOptions {
  /** Names the host in error messages ("the web host", "this connection"). */
  name: string
  /** Working directory of created sessions (default: the launcher's cwd, else the process's). */
  cwd?: string
  /** The cancel reason of agents still attached when the host closes, and of questions it drops. */
  closeReason: string
  /** Hold approval questions for the client (default true); false leaves them to another answerer. */
  answerApprovals?: boolean
  /** Hold `ask_user` questions for the client (default true when `ctx.userQuestions` is loaded). */
  answerQuestions?: boolean
  /** Diagnostics for a person (stderr). */
  log?: (line: string) => void
  on?: SessionHostListeners
}

interface Attached {
  agent: Agent
  /** Sessions the host restored or forked; the agent closes the ones it created. */
  ownsSession: boolean
  resources: Disposer[]
}

/** Longest title a person may give (the model's are shorter). */
const MAX_TITLE = 120

const RESUMABLE_ONLY = 'this profile has no session persistence row; sessions are not durable'

export class SessionHost {
  private readonly attachedSessions = new Map<string, Attached>()
  /** Resumes in progress, by session id (two resumes of one session share one agent). */
  private readonly resuming = new Map<string, Promise<Agent>>()
  /** Every attach in progress (close waits for them). */
  private readonly attaching = new Set<Promise<unknown>>()
  /** Ids of agents this host created, recorded before creation so `agent/created` can tell. */
  private readonly ownAgents = new Set<string>()
  private readonly pendingApprovals: PendingRegistry<ApprovalQuestion, ApprovalAnswer>
  private readonly pendingQuestions: PendingRegistry<AskedQuestion, QuestionOutcome>
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
    this.pendingApprovals = new PendingRegistry('approval', (id, answer) =>
      this.listeners.approvalSettled?.(id, answer),
    )
    this.pendingQuestions = new PendingRegistry('question', (id, answer) =>
      this.listeners.questionSettled?.(id, answer),
    )
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
    const approval = ctx.get('approval')
    if (approval && this.options.answerApprovals !== false) {
      this.disposers.push(
        approval.answer((question, signal) =>
          this.pendingApprovals.ask(question.requestId, question, signal, { decision: 'cancelled' }, (pending) =>
            this.listeners.approvalRequested?.(pending),
          ),
        ),
      )
    }
    const questions = ctx.get('userQuestions')
    if (questions && this.options.answerQuestions !== false) {
      this.disposers.push(
        questions.answer((question, signal) =>
          this.pendingQuestions.ask(
            question.id,
            question,
            signal,
            { status: 'cancelled', reason: 'the turn was cancelled' },
            (pending) => this.listeners.questionRequested?.(pending),
          ),
        ),
      )
    }
  }

  /** Whether this host holds `ask_user` questions (a `ctx.userQuestions` row is loaded and it answers). */
  get answersQuestions(): boolean {
    return Boolean(this.ctx.get('userQuestions')) && this.options.answerQuestions !== false
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
    this.disposeResources(sessionId, attached)
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
    const clean = title.replace(/\s+/g, ' ').trim()
    if (!clean || clean.length > MAX_TITLE)
      throw new HarnessError('INVALID_TITLE', `a title is 1 to ${MAX_TITLE} characters, got ${clean.length}`, {})
    if (!this.ctx.sessions.vocabulary.has('session/title'))
      throw new HarnessError(
        'NOT_AVAILABLE',
        'renaming logs a session/title event, which the session-title row declares; enable that row',
        {},
      )
    const session = (await this.resume(sessionId)).session
    session.append('session/title', { title: clean, by: 'user' }, { ignorable: true })
    await this.ctx.sessions.flush(session)
    this.listeners.listChanged?.()
    return clean
  }

  /** Deletes a durable session (released first when this host drives it); see `removeSessions`. */
  async remove(sessionId: string): Promise<RemoveReport> {
    await this.release(sessionId, 'the session was deleted')
    const report = await removeSessions(this.ctx, [sessionId])
    this.listeners.listChanged?.()
    return report
  }

  /** A session as a file (`exportLines`): the live log when this host drives it, else the durable one. */
  async export(sessionId: string, format: ExportFormat): Promise<string[]> {
    const live = this.attachedSessions.get(sessionId)?.agent.session
    if (live) return exportLines(live, format)
    const query = this.ctx.get('sessionQuery')
    if (!query) throw new HarnessError('NOT_AVAILABLE', 'the profile has no session-query row to read sessions', {})
    return exportLines(await query.read(sessionId), format)
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
        ...(options.preset !== undefined ? { preset: options.preset } : {}),
      })
    } catch (error) {
      this.ownAgents.delete(id)
      throw error
    }
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

  private disposeResources(sessionId: string, attached: Attached): void {
    for (const dispose of attached.resources.splice(0).reverse()) {
      try {
        const done = dispose()
        if (done instanceof Promise) done.catch((error) => this.log(`cleanup of ${sessionId} failed: ${String(error)}`))
      } catch (error) {
        this.log(`cleanup of session ${sessionId} failed: ${String(error)}`)
      }
    }
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

  /** The background jobs of the session's attached agent (needs a `ctx.jobs` row). */
  jobsOf(sessionId: string): JobInfo[] {
    const agent = this.attachedSessions.get(sessionId)?.agent
    const jobs = this.ctx.get('jobs')
    if (!agent || !jobs) return []
    return jobs.list({ sessionId, agentId: agent.id })
  }

  /**
   * Output of one of the session's jobs from byte `from`, for a person watching it: the model's read
   * cursor does not move. Throws `JOB_NOT_FOUND`, `SESSION_NOT_ATTACHED`.
   */
  jobOutput(sessionId: string, jobId: string, from: number, maxBytes?: number): JobOutputPeek {
    const agent = this.agent(sessionId)
    const jobs = this.ctx.get('jobs')
    if (!jobs) throw new HarnessError('JOB_NOT_FOUND', `no job ${jobId}`, { jobId })
    return jobs.peek(jobId, { sessionId, agentId: agent.id }, from, maxBytes)
  }

  /** Kills one of the session's jobs and waits until it is gone. Throws `JOB_NOT_FOUND`. */
  async killJob(sessionId: string, jobId: string): Promise<void> {
    const agent = this.agent(sessionId)
    const jobs = this.ctx.get('jobs')
    if (!jobs) throw new HarnessError('JOB_NOT_FOUND', `no job ${jobId}`, { jobId })
    await jobs.kill(jobId, { sessionId, agentId: agent.id })
    this.listeners.stateChanged?.(sessionId)
  }

  /** The session's permission mode, when a sandbox policy row is loaded. */
  modeOf(sessionId: string): string | undefined {
    return this.ctx.get('sandboxPolicy')?.mode(sessionId)
  }

  /** The permission presets a session may switch to. */
  modes(): string[] {
    const policy = this.ctx.get('sandboxPolicy')
    return policy ? Object.keys(policy.presets()) : []
  }

  /** Switches an attached session's permission mode (logged as `sandbox/mode`). Throws `SANDBOX_MODE_INVALID`. */
  setMode(sessionId: string, mode: string): string {
    const policy = this.ctx.get('sandboxPolicy')
    if (!policy) throw new HarnessError('NO_SANDBOX_POLICY', 'this profile has no sandbox policy row', {})
    this.agent(sessionId)
    const applied = policy.setMode(sessionId, mode)
    this.listeners.stateChanged?.(sessionId)
    return applied
  }

  // ---- presets ----

  /**
   * The presets a new session in `cwd` (default the host's) can be created with, sorted by name;
   * empty without a presets row.
   */
  async presets(cwd = this.cwd): Promise<PresetSummary[]> {
    const presets = this.ctx.get('presets')
    if (!presets) return []
    return (await presets.list(cwd)).map((preset) => ({
      name: preset.name,
      description: preset.description,
      origin: preset.source.origin,
    }))
  }

  /** The preset name new sessions get when they ask for none (undefined without a presets row). */
  defaultPreset(): string | undefined {
    return this.ctx.get('presets')?.defaultName()
  }

  /** The preset of an attached session (undefined without a presets row). */
  presetOf(sessionId: string): string | undefined {
    return this.attachedSessions.get(sessionId)?.agent.preset
  }

  /** Whether an attached session may still switch preset (it has no turn of its own yet). */
  presetLocked(sessionId: string): boolean {
    const agent = this.attachedSessions.get(sessionId)?.agent
    return agent === undefined || hasOwnTurn(agent.session)
  }

  /**
   * Switches an attached session to another preset (logged as `preset/selected`). Only before the
   * session's first turn: throws `PRESET_LOCKED` after it, `SESSION_NOT_ATTACHED`, `NO_PRESETS`,
   * `PRESET_NOT_FOUND` / `PRESET_INVALID`.
   */
  async setPreset(sessionId: string, name: string): Promise<string> {
    const agent = this.agent(sessionId)
    await agent.setPreset(name)
    this.listeners.stateChanged?.(sessionId)
    return name
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

  // ---- approvals and questions ----

  approvals(): Pending<ApprovalQuestion>[] {
    return this.pendingApprovals.list()
  }

  /** Answers a pending approval; the first answer wins. Throws `APPROVAL_NOT_FOUND`. */
  respond(requestId: string, answer: ApprovalAnswer): void {
    this.pendingApprovals.settle(requestId, answer)
  }

  questions(): Pending<AskedQuestion>[] {
    return this.pendingQuestions.list()
  }

  /** Answers a pending `ask_user` question; the first answer wins. Throws `QUESTION_NOT_FOUND`. */
  answerQuestion(questionId: string, answer: string): void {
    this.pendingQuestions.settle(questionId, { status: 'answered', answer })
  }

  // ---- commands ----

  /** Whether `line` is a registered human /command (false when the profile has no commands row). */
  isCommand(line: string): boolean {
    return this.ctx.get('commands')?.isCommand(line) ?? false
  }

  /** Runs a /command for an attached session, without a model turn. Throws `COMMANDS_UNAVAILABLE`. */
  async command(sessionId: string, line: string, signal?: AbortSignal): Promise<CommandOutcome> {
    const agent = this.agent(sessionId)
    const commands = this.ctx.get('commands')
    if (!commands) {
      throw new HarnessError('COMMANDS_UNAVAILABLE', 'this profile has no commands row (interaction-commands)', {})
    }
    return commands.dispatch(line, { session: agent.session, agent, ...(signal ? { signal } : {}) })
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
      this.pendingApprovals.settleAll({ decision: 'cancelled' })
      this.pendingQuestions.settleAll({ status: 'cancelled', reason: this.options.closeReason })
      await Promise.allSettled([...this.attaching])
      const attached = [...this.attachedSessions.entries()]
      this.attachedSessions.clear()
      await releaseAgents(
        this.ctx.sessions,
        attached.map(([, entry]) => entry),
        { reason: this.options.closeReason, log: this.log },
      )
      for (const [sessionId, entry] of attached) this.disposeResources(sessionId, entry)
      this.subscriptions.clear()
      for (const dispose of this.disposers.splice(0).reverse()) dispose()
    })()
    return this.closing
  }
}
