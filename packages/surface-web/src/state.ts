// What one listening host owns: the agents it attached (one per session), the pending approval
// questions, and the subscribers of the two downlink streams. Every stream starts with a baseline
// taken in the same tick as the subscription, so a client converges without gaps or duplicates.
import { randomUUID } from 'node:crypto'
import { type Agent, type InboxState, releaseAgents } from '@dsh/agent'
import type { ApprovalAnswer, ApprovalQuestion } from '@dsh/approval'
import { type Context, HarnessError, toJsonSafe } from '@dsh/kernel'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session-store/coordinator'
import type {} from '@dsh/session-store/query'
import type {
  AgentStatus,
  ApprovalView,
  EventEnvelope,
  HostFrame,
  InboxView,
  JobView,
  QuestionView,
  SessionFrame,
  SessionSummary,
} from './protocol.js'

/** One downlink socket as the state sees it. */
export interface Downlink {
  send(frame: string): void
  /** Closes the socket (e.g. the client fell too far behind and must reconnect with `since`). */
  drop(reason: string): void
  readonly buffered: number
}

interface SessionSubscriber {
  link: Downlink
  /** The seq of the next event this subscriber has not been sent. */
  next: number
}

/** The parts of `ctx.userQuestions` (@dsh/interaction, optional) the host uses. */
interface AskedQuestion {
  id: string
  question: string
  options?: readonly string[]
  sessionId?: string
  toolCallId?: string
}
type QuestionAnswer = { status: 'answered'; answer: string } | { status: 'cancelled'; reason?: string }
interface QuestionSeam {
  answer(answerer: (question: AskedQuestion, signal: AbortSignal) => Promise<QuestionAnswer>): () => void
}

/** The parts of `ctx.jobs` (@dsh/jobs, optional) the host uses. */
interface JobsSeam {
  list(owner: { sessionId: string; agentId: string }): Array<{
    id: string
    title: string
    status: string
    summary?: string
    startedAt: number
  }>
  kill(id: string, owner: { sessionId: string; agentId: string }): Promise<unknown>
}

/** The parts of `ctx.sandboxPolicy` (@dsh/sandbox, optional) the host uses. */
interface PolicySeam {
  mode(sessionId?: string): string
  setMode(sessionId: string, mode: string): string
  presets(): Readonly<Record<string, unknown>>
}

/** A subscriber further behind than this many bytes is dropped; it reconnects from its last seq. */
const MAX_BUFFERED = 32 * 1024 * 1024

export class HostState {
  private readonly attached = new Map<string, { agent: Agent; ownsSession: boolean }>()
  private readonly attaching = new Map<string, Promise<Agent>>()
  private readonly approvals = new Map<string, { view: ApprovalView; settle(answer: ApprovalAnswer): void }>()
  private readonly questions = new Map<string, { view: QuestionView; settle(answer: QuestionAnswer): void }>()
  private readonly hostLinks = new Set<Downlink>()
  private readonly sessionLinks = new Map<string, Set<SessionSubscriber>>()
  private readonly disposers: Array<() => void> = []
  private listTimer: NodeJS.Timeout | undefined
  private listRuns = 0
  private closing: Promise<void> | undefined

  constructor(
    private readonly ctx: Context,
    private readonly defaultCwd: string,
    private readonly log: (line: string) => void,
  ) {
    this.disposers.push(
      ctx.on('session/event', (session, event) => {
        const subscribers = this.sessionLinks.get(session.id)
        if (subscribers) for (const subscriber of subscribers) this.deliver(subscriber, session)
        // The splice is logged before the inbox changes in memory: report the state after it.
        if (event.type === 'agent/inbox/spliced') queueMicrotask(() => this.pushState(session.id))
        // A tool result may have started a background job.
        if (event.type === 'tool/result') queueMicrotask(() => this.pushState(session.id))
        if (event.type === 'turn/end' || event.type === 'user/message') this.scheduleList()
      }),
      ctx.on(
        'jobs/finished' as never,
        ((job: { owner: { sessionId?: string } }) => {
          if (job.owner.sessionId) this.pushState(job.owner.sessionId)
        }) as never,
      ),
      ctx.on('agent/phase', (agent) => {
        if (this.attached.get(agent.session.id)?.agent !== agent) return
        queueMicrotask(() => {
          this.pushState(agent.session.id)
          this.scheduleList()
        })
      }),
    )
    const approval = ctx.get('approval')
    if (approval) this.disposers.push(approval.answer((question, signal) => this.ask(question, signal)))
    const questions = ctx.get('userQuestions' as never) as QuestionSeam | undefined
    if (questions) this.disposers.push(questions.answer((question, signal) => this.askQuestion(question, signal)))
  }

  // ---- sessions ----

  async list(): Promise<SessionSummary[]> {
    const query = this.ctx.get('sessionQuery')
    const durable = query ? await query.list() : []
    const rows: SessionSummary[] = durable.map((summary) => ({
      sessionId: summary.id,
      cwd: summary.cwd,
      ...(summary.title ? { title: summary.title } : {}),
      createdAt: summary.createdAt,
      updatedAt: summary.updatedAt,
      ...(summary.parentSession ? { parentSessionId: summary.parentSession } : {}),
      eventCount: summary.eventCount,
      attached: this.attached.has(summary.id),
      status: this.statusOf(summary.id),
    }))
    for (const { agent } of this.attached.values()) {
      const session = agent.session
      const existing = rows.find((row) => row.sessionId === session.id)
      const title = titleOf(session)
      const live = {
        eventCount: session.length,
        updatedAt: session.events.at(-1)?.time ?? session.header.createdAt,
        ...(title ? { title } : {}),
      }
      if (existing) Object.assign(existing, live)
      else {
        rows.push({
          sessionId: session.id,
          cwd: session.header.cwd,
          createdAt: session.header.createdAt,
          ...(session.header.parentSession ? { parentSessionId: session.header.parentSession } : {}),
          attached: true,
          status: this.statusOf(session.id),
          ...live,
        })
      }
    }
    return rows.sort((a, b) => b.updatedAt - a.updatedAt)
  }

  async create(cwd: string | undefined): Promise<Agent> {
    return this.attach(undefined, cwd ?? this.defaultCwd, false)
  }

  /** The agent of a session, attaching one (cold resume from persistence) when none drives it yet. */
  async resume(sessionId: string): Promise<Agent> {
    const attached = this.attached.get(sessionId)
    if (attached) return attached.agent
    const pending = this.attaching.get(sessionId)
    if (pending) return pending
    if (this.ctx.sessions.get(sessionId)) {
      throw new HarnessError(
        'SESSION_BUSY',
        `session ${sessionId} is live in this process but not driven by the web host`,
        {
          sessionId,
        },
      )
    }
    const resuming = (async () => {
      const session = await this.persistence().resume(sessionId)
      try {
        return await this.attach(session, undefined, true)
      } catch (error) {
        this.ctx.sessions.close(session)
        throw error
      }
    })()
    this.attaching.set(sessionId, resuming)
    try {
      return await resuming
    } finally {
      this.attaching.delete(sessionId)
    }
  }

  async fork(sessionId: string, at: number | undefined): Promise<Agent> {
    const live = this.attached.get(sessionId)?.agent.session
    const source = live ?? (await this.persistence().read(sessionId))
    const child = this.ctx.sessions.fork(source, at)
    try {
      return await this.attach(child, undefined, true)
    } catch (error) {
      this.ctx.sessions.close(child)
      throw error
    }
  }

  /** The attached agent of a session; throws `SESSION_NOT_ATTACHED` (resume it first). */
  agent(sessionId: string): Agent {
    const attached = this.attached.get(sessionId)
    if (!attached) {
      throw new HarnessError('SESSION_NOT_ATTACHED', `session ${sessionId} is not open; resume it first`, { sessionId })
    }
    return attached.agent
  }

  private async attach(session: Session | undefined, cwd: string | undefined, ownsSession: boolean): Promise<Agent> {
    if (this.closing) throw new HarnessError('WEB_HOST_CLOSING', 'the web host is shutting down', {})
    const agent = await this.ctx.agents.create({ id: randomUUID(), session, cwd })
    this.attached.set(agent.session.id, { agent, ownsSession })
    this.scheduleList()
    return agent
  }

  private persistence() {
    const persistence = this.ctx.get('sessionPersistence')
    if (!persistence) throw new HarnessError('NO_PERSISTENCE', 'this profile has no session persistence row', {})
    return persistence
  }

  statusOf(sessionId: string): AgentStatus {
    const agent = this.attached.get(sessionId)?.agent
    if (!agent || agent.disposed) return 'detached'
    return agent.phase === 'idle' ? 'idle' : 'running'
  }

  /** The background jobs of the session's attached agent (no output: reading it would move the model's cursor). */
  jobsOf(sessionId: string): JobView[] {
    const agent = this.attached.get(sessionId)?.agent
    const jobs = this.ctx.get('jobs' as never) as JobsSeam | undefined
    if (!agent || !jobs) return []
    return jobs.list({ sessionId, agentId: agent.id }).map((job) => ({
      id: job.id,
      title: job.title,
      status: job.status,
      ...(job.summary ? { summary: job.summary } : {}),
      startedAt: job.startedAt,
    }))
  }

  /** Kills one of the session's jobs and waits until it is gone. Throws `JOB_NOT_FOUND`. */
  async killJob(sessionId: string, jobId: string): Promise<void> {
    const agent = this.agent(sessionId)
    const jobs = this.ctx.get('jobs' as never) as JobsSeam | undefined
    if (!jobs) throw new HarnessError('JOB_NOT_FOUND', `no job ${jobId}`, { jobId })
    await jobs.kill(jobId, { sessionId, agentId: agent.id })
    this.pushState(sessionId)
  }

  /** The session's permission mode, when a sandbox policy row is loaded. */
  modeOf(sessionId: string): string | undefined {
    return this.policy()?.mode(sessionId)
  }

  /** Permission presets a session may switch to. */
  modes(): string[] {
    const policy = this.policy()
    return policy ? Object.keys(policy.presets()) : []
  }

  /** Switches a session's permission mode (logged as `sandbox/mode`); throws `SANDBOX_MODE_INVALID`. */
  setMode(sessionId: string, mode: string): string {
    const policy = this.policy()
    if (!policy) throw new HarnessError('NO_SANDBOX_POLICY', 'this profile has no sandbox policy row', {})
    this.agent(sessionId)
    const applied = policy.setMode(sessionId, mode)
    this.pushState(sessionId)
    return applied
  }

  private policy(): PolicySeam | undefined {
    return this.ctx.get('sandboxPolicy' as never) as PolicySeam | undefined
  }

  inboxOf(sessionId: string): InboxView {
    const agent = this.attached.get(sessionId)?.agent
    return agent ? inboxView(agent.inbox()) : { 'next-step': [], 'next-turn': [] }
  }

  // ---- streams ----

  /** Subscribes a host stream: the baseline (session list, pending approvals) first, then changes. */
  async subscribeHost(link: Downlink): Promise<() => void> {
    const sessions = await this.list()
    this.hostLinks.add(link)
    this.sendHost(link, {
      type: 'host/baseline',
      sessions,
      approvals: [...this.approvals.values()].map((a) => a.view),
      questions: [...this.questions.values()].map((q) => q.view),
      modes: this.modes(),
    })
    return () => this.hostLinks.delete(link)
  }

  /**
   * Subscribes a session stream from `since`. A live session's baseline and subscription happen in
   * one tick; a durable-only session is read first and gets live events once something attaches it.
   */
  async subscribeSession(sessionId: string, since: number, link: Downlink): Promise<() => void> {
    let session: Session | undefined = this.ctx.sessions.get(sessionId)
    if (!session) {
      const query = this.ctx.get('sessionQuery')
      if (!query) throw new HarnessError('NO_PERSISTENCE', 'this profile has no session query row', {})
      const read = await query.read(sessionId)
      session = this.ctx.sessions.get(sessionId) ?? read
    }
    const header = session.header
    const start = Math.max(0, Math.min(since, session.length))
    const frame: SessionFrame = {
      type: 'session/baseline',
      header: {
        id: header.id,
        cwd: header.cwd,
        createdAt: header.createdAt,
        ...(header.parentSession ? { parentSession: header.parentSession } : {}),
        ...(header.seedLength !== undefined ? { seedLength: header.seedLength } : {}),
      },
      since: start,
      events: session.events.slice(start) as EventEnvelope[],
      status: this.statusOf(sessionId),
      inbox: this.inboxOf(sessionId),
      ...this.modeField(sessionId),
      jobs: this.jobsOf(sessionId),
    }
    const subscriber: SessionSubscriber = { link, next: session.length }
    const set = this.sessionLinks.get(sessionId) ?? new Set<SessionSubscriber>()
    this.sessionLinks.set(sessionId, set)
    set.add(subscriber)
    link.send(JSON.stringify(frame))
    return () => {
      set.delete(subscriber)
      if (set.size === 0 && this.sessionLinks.get(sessionId) === set) this.sessionLinks.delete(sessionId)
    }
  }

  /** Sends every event the subscriber has not had yet, in seq order (fills any gap, never repeats). */
  private deliver(subscriber: SessionSubscriber, session: Session): void {
    if (subscriber.link.buffered > MAX_BUFFERED) {
      subscriber.link.drop('the client fell behind; reconnect with since')
      return
    }
    while (subscriber.next < session.length) {
      const event = session.events[subscriber.next] as EventEnvelope
      subscriber.next += 1
      subscriber.link.send(JSON.stringify({ type: 'session/event', event } satisfies SessionFrame))
    }
  }

  private modeField(sessionId: string): { mode?: string } {
    const mode = this.modeOf(sessionId)
    return mode === undefined ? {} : { mode }
  }

  private pushState(sessionId: string): void {
    const subscribers = this.sessionLinks.get(sessionId)
    if (!subscribers?.size) return
    const frame = JSON.stringify({
      type: 'session/state',
      status: this.statusOf(sessionId),
      inbox: this.inboxOf(sessionId),
      ...this.modeField(sessionId),
      jobs: this.jobsOf(sessionId),
    } satisfies SessionFrame)
    for (const subscriber of subscribers) subscriber.link.send(frame)
  }

  private scheduleList(): void {
    if (this.listTimer || this.closing || this.hostLinks.size === 0) return
    this.listTimer = setTimeout(() => {
      this.listTimer = undefined
      // Reads of the store can finish out of order: only the newest list is sent.
      const run = ++this.listRuns
      void this.list()
        .then((sessions) => {
          if (run === this.listRuns) this.broadcastHost({ type: 'host/sessions', sessions })
        })
        .catch((error) => this.log(`session list failed: ${String(error)}`))
    }, 50)
  }

  private sendHost(link: Downlink, frame: HostFrame): void {
    link.send(JSON.stringify(frame))
  }

  private broadcastHost(frame: HostFrame): void {
    for (const link of this.hostLinks) this.sendHost(link, frame)
  }

  // ---- approvals ----

  private ask(question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalAnswer> {
    return new Promise((resolve) => {
      const requestId = question.requestId
      const settle = (answer: ApprovalAnswer) => {
        if (!this.approvals.delete(requestId)) return
        signal.removeEventListener('abort', onAbort)
        this.broadcastHost({ type: 'approval/settled', requestId, decision: answer.decision })
        resolve(answer)
      }
      const onAbort = () => settle({ decision: 'cancelled' })
      const { requestId: _id, policy: _policy, askedAt: _at, ...rest } = question
      const view = { requestId, ...(toJsonSafe(rest) as Omit<ApprovalView, 'requestId'>) }
      this.approvals.set(requestId, { view, settle })
      signal.addEventListener('abort', onAbort)
      this.broadcastHost({ type: 'approval/requested', approval: view })
      if (signal.aborted) onAbort()
    })
  }

  /** Answers a pending question; the first answer wins. Throws `APPROVAL_NOT_FOUND` for a settled one. */
  respond(requestId: string, answer: ApprovalAnswer): void {
    const pending = this.approvals.get(requestId)
    if (!pending) {
      throw new HarnessError('APPROVAL_NOT_FOUND', `no pending approval ${requestId} (answered or cancelled)`, {
        requestId,
      })
    }
    pending.settle(answer)
  }

  // ---- questions (`ask_user`) ----

  private askQuestion(question: AskedQuestion, signal: AbortSignal): Promise<QuestionAnswer> {
    return new Promise((resolve) => {
      const questionId = question.id
      const settle = (answer: QuestionAnswer) => {
        if (!this.questions.delete(questionId)) return
        signal.removeEventListener('abort', onAbort)
        this.broadcastHost({ type: 'question/settled', questionId, status: answer.status })
        resolve(answer)
      }
      const onAbort = () => settle({ status: 'cancelled', reason: 'the turn was cancelled' })
      const view: QuestionView = {
        questionId,
        question: question.question,
        ...(question.options ? { options: [...question.options] } : {}),
        ...(question.sessionId ? { sessionId: question.sessionId } : {}),
        ...(question.toolCallId ? { toolCallId: question.toolCallId } : {}),
      }
      this.questions.set(questionId, { view, settle })
      signal.addEventListener('abort', onAbort)
      this.broadcastHost({ type: 'question/requested', question: view })
      if (signal.aborted) onAbort()
    })
  }

  /** Answers a pending question; the first answer wins. Throws `QUESTION_NOT_FOUND`. */
  answerQuestion(questionId: string, answer: string): void {
    const pending = this.questions.get(questionId)
    if (!pending) {
      throw new HarnessError('QUESTION_NOT_FOUND', `no pending question ${questionId} (answered or cancelled)`, {
        questionId,
      })
    }
    pending.settle({ status: 'answered', answer })
  }

  // ---- teardown ----

  /** Cancels pending approvals, disposes the agents, flushes and closes their sessions. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.listTimer) clearTimeout(this.listTimer)
      for (const pending of [...this.approvals.values()]) pending.settle({ decision: 'cancelled' })
      for (const pending of [...this.questions.values()]) {
        pending.settle({ status: 'cancelled', reason: 'the web host is shutting down' })
      }
      await Promise.allSettled([...this.attaching.values()])
      const attached = [...this.attached.values()]
      this.attached.clear()
      await releaseAgents(this.ctx.sessions, attached, {
        reason: 'the web host is shutting down',
        log: (line) => this.log(line),
      })
      for (const dispose of this.disposers.splice(0).reverse()) dispose()
    })()
    return this.closing
  }
}

function inboxView(state: InboxState): InboxView {
  const items = (queue: InboxState['next-turn']) =>
    queue.map((item) => ({
      id: item.id,
      kind: item.kind,
      text: item.message.content.map((block) => (block.type === 'text' ? block.text : '[image]')).join(''),
    }))
  return { 'next-step': items(state['next-step']), 'next-turn': items(state['next-turn']) }
}

/** The first user message of a live session, shortened (durable rows get theirs from the store). */
function titleOf(session: Session): string | undefined {
  for (const event of session.events) {
    if (event.type !== 'user/message') continue
    const data = event.data as { message: { content: Array<{ type: string; text?: string }> }; origin?: string }
    if (data.origin) continue
    const text = data.message.content
      .map((block) => block.text ?? '')
      .join(' ')
      .trim()
    if (text) return text.length > 80 ? `${text.slice(0, 77)}...` : text
  }
  return undefined
}
