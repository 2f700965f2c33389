// The `dsh rpc` server row: one connection per stream pair; each connection owns the agents it
// creates (one per session it creates, resumes or forks) and routes approval questions to its client.
import { randomUUID } from 'node:crypto'
import { isAbsolute, resolve } from 'node:path'
import { type Agent, releaseAgents } from '@dsh/agent'
import type { ApprovalAnswer, ApprovalQuestion } from '@dsh/approval'
import type { CommandsService } from '@dsh/interaction'
import { type Context, toJsonSafe } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session-store/coordinator'
import type {} from '@dsh/session-store/query'
import { type RpcConnection, type RpcServeOptions, RpcServer } from './index.js'
import {
  JsonRpcEndpoint,
  optionalInteger,
  optionalString,
  RpcError,
  type RpcHandler,
  requireString,
} from './jsonrpc.js'
import {
  type AgentStatusNotification,
  type CommandRunResult,
  type InitializeResult,
  type ModelRoute,
  type PromptResult,
  type ResolvedModel,
  RPC_PROTOCOL_VERSION,
  type RpcNotifications,
  type SessionListResult,
  type SessionSummary,
} from './protocol.js'

const SERVER_NAME = 'dsh-rpc'
const SERVER_VERSION = '0.1.0'

/** An agent this connection drives, and whether it must close the session itself on teardown. */
interface Attached {
  agent: Agent
  /** Sessions restored or forked by the connection (the agent closes the ones it created). */
  ownsSession: boolean
}

interface PendingApproval {
  resolve(answer: ApprovalAnswer): void
}

/** The parts of `ctx.userQuestions` (@dsh/interaction, optional) this server uses. */
interface QuestionSeam {
  answer(
    answerer: (
      question: {
        id: string
        question: string
        options?: string[]
        sessionId?: string
        agentId?: string
        toolCallId?: string
      },
      signal: AbortSignal,
    ) => Promise<QuestionAnswer>,
  ): () => void
}

type QuestionAnswer = { status: 'answered'; answer: string } | { status: 'cancelled'; reason?: string }

export class RpcServerService extends RpcServer {
  static readonly provide = 'rpc'
  static readonly inject = ['agents', 'sessions']
  readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'rpc')
    this.home = ctx
  }

  serve(options: RpcServeOptions): RpcConnection {
    return new Connection(this.home, options)
  }
}

class Connection implements RpcConnection {
  readonly closed: Promise<void>
  private resolveClosed!: () => void
  private readonly endpoint: JsonRpcEndpoint
  private readonly attached = new Map<string, Attached>()
  /** Agent ids this connection created (root agents); any other agent is someone's subagent. */
  private readonly ownAgents = new Set<string>()
  private readonly approvals = new Map<string, PendingApproval>()
  private readonly questions = new Map<string, (answer: QuestionAnswer) => void>()
  /** Agent creations in progress (a shutdown that arrives meanwhile waits for them). */
  private readonly attaching = new Set<Promise<Agent>>()
  private readonly status = new Map<string, AgentStatusNotification['status']>()
  /** Agents whose idle report waits for a flush. */
  private readonly flushing = new Set<string>()
  private readonly disposers: Array<() => void> = []
  private init: InitializeResult | undefined
  /** The model routing `initialize` asked for; sessions fall back to it. */
  private route: ModelRoute = {}
  private closing: Promise<void> | undefined
  private finishing: Promise<void> | undefined
  private readonly log: (line: string) => void

  constructor(
    private readonly ctx: Context,
    options: RpcServeOptions,
  ) {
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve
    })
    this.log = options.log ?? (() => {})
    const handlers: Record<string, RpcHandler> = {
      initialize: (p) => this.initialize(p),
      'session/create': (p) => this.ready(() => this.sessionCreate(p)),
      'session/resume': (p) => this.ready(() => this.sessionResume(p)),
      'session/list': (p) => this.ready(() => this.sessionList(p)),
      'session/fork': (p) => this.ready(() => this.sessionFork(p)),
      prompt: (p) => this.ready(() => this.queue(p, 'followup')),
      steer: (p) => this.ready(() => this.queue(p, 'steer')),
      cancel: (p) => this.ready(() => this.cancel(p)),
      'approval/respond': (p) => this.ready(() => this.approvalRespond(p)),
      'question/respond': (p) => this.ready(() => this.questionRespond(p)),
      'command/run': (p) => this.ready(() => this.commandRun(p)),
      shutdown: () => this.shutdown(),
    }
    this.endpoint = new JsonRpcEndpoint({
      input: options.input,
      output: options.output,
      handlers,
      log: this.log,
      onEnd: () => void this.close(),
    })
    this.listen()
  }

  private notify<M extends keyof RpcNotifications>(method: M, params: RpcNotifications[M]): void {
    this.endpoint.notify(method, params)
  }

  /** Forwards committed events, whole-agent status and agent lifecycle of the whole process. */
  private listen(): void {
    const ctx = this.ctx
    this.disposers.push(
      ctx.on('session/event', (session, event) => {
        const parentSessionId = session.header.parentSession
        this.notify('session/event', {
          sessionId: session.id,
          ...(parentSessionId ? { parentSessionId } : {}),
          event: event as never,
        })
      }),
      ctx.on('agent/phase', (agent) => {
        // The driver passes through idle between back-to-back activities; report settled states only.
        queueMicrotask(() => this.reportStatus(agent))
      }),
      ctx.on('agent/created', (agent) => {
        const parentSessionId = agent.session.header.parentSession
        this.notify('agent/lifecycle', {
          type: 'created',
          agentId: agent.id,
          sessionId: agent.session.id,
          root: this.ownAgents.has(agent.id),
          ...(parentSessionId ? { parentSessionId } : {}),
        })
      }),
      ctx.on('agent/disposed', (agent) => {
        this.status.delete(agent.id)
        this.notify('agent/lifecycle', {
          type: 'disposed',
          agentId: agent.id,
          sessionId: agent.session.id,
          root: this.ownAgents.has(agent.id),
        })
      }),
    )
    const approval = ctx.get('approval')
    if (approval) this.disposers.push(approval.answer((question, signal) => this.ask(question, signal)))
    const questions = this.questionSeam()
    if (questions) this.disposers.push(questions.answer((question, signal) => this.askQuestion(question, signal)))
  }

  private questionSeam(): QuestionSeam | undefined {
    return (this.ctx as unknown as { get(name: string): unknown }).get('userQuestions') as QuestionSeam | undefined
  }

  private askQuestion(
    question: Parameters<Parameters<QuestionSeam['answer']>[0]>[0],
    signal: AbortSignal,
  ): Promise<QuestionAnswer> {
    return new Promise((resolvePromise) => {
      const questionId = question.id
      const settle = (answer: QuestionAnswer) => {
        if (!this.questions.delete(questionId)) return
        signal.removeEventListener('abort', onAbort)
        this.notify('question/settled', { questionId, status: answer.status })
        resolvePromise(answer)
      }
      const onAbort = () => settle({ status: 'cancelled', reason: 'the turn was cancelled' })
      this.questions.set(questionId, settle)
      signal.addEventListener('abort', onAbort)
      const { id: _id, askedAt: _at, ...rest } = question as typeof question & { askedAt?: number }
      this.notify('question/requested', { questionId, ...(toJsonSafe(rest) as { question: string }) })
      if (signal.aborted) onAbort()
    })
  }

  /**
   * Reports a settled status change. `idle` is sent only after the session is flushed (so an idle
   * session is durable), and only if the agent is still idle by then.
   */
  private reportStatus(agent: Agent): void {
    if (agent.disposed) return
    const id = agent.id
    if (agent.phase !== 'idle') {
      if (this.status.get(id) === 'running') return
      this.status.set(id, 'running')
      this.notify('agent/status', { sessionId: agent.session.id, agentId: id, status: 'running' })
      return
    }
    if (this.status.get(id) === 'idle' || this.flushing.has(id)) return
    this.flushing.add(id)
    void this.flushSettled(agent.session).then(() => {
      this.flushing.delete(id)
      if (agent.disposed || agent.phase !== 'idle' || this.status.get(id) === 'idle') return
      this.status.set(id, 'idle')
      this.notify('agent/status', { sessionId: agent.session.id, agentId: id, status: 'idle' })
    })
  }

  /** Flushes until nothing new was appended while flushing. Never rejects (a failure is logged). */
  private async flushSettled(session: Session): Promise<void> {
    // An empty session has nothing to make durable (and its header-only flush can wait for the close).
    for (let length = 0; length !== session.length; ) {
      length = session.length
      try {
        await this.ctx.sessions.flush(session)
      } catch (error) {
        this.log(`flush of session ${session.id} failed: ${String(error)}`)
        return
      }
    }
  }

  private ask(question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalAnswer> {
    return new Promise((resolvePromise) => {
      const requestId = question.requestId
      const settle = (answer: ApprovalAnswer) => {
        if (!this.approvals.delete(requestId)) return
        signal.removeEventListener('abort', onAbort)
        this.notify('approval/settled', { requestId, decision: answer.decision })
        resolvePromise(answer)
      }
      const onAbort = () => settle({ decision: 'cancelled' })
      this.approvals.set(requestId, { resolve: settle })
      signal.addEventListener('abort', onAbort)
      const { requestId: _id, policy: _policy, askedAt: _at, ...rest } = question
      this.notify('approval/requested', { requestId, ...(toJsonSafe(rest) as { summary: string }) })
      if (signal.aborted) onAbort()
    })
  }

  private ready<T>(run: () => T): T {
    if (this.closing) throw RpcError.refused('SHUTTING_DOWN', 'the server is shutting down')
    if (!this.init) throw RpcError.refused('NOT_INITIALIZED', 'call initialize first')
    return run()
  }

  private resolveCwd(cwd: string | undefined): string {
    const base = this.init?.cwd ?? launcherCwd(this.ctx) ?? process.cwd()
    if (cwd === undefined) return base
    return isAbsolute(cwd) ? cwd : resolve(base, cwd)
  }

  private modelOf(params: Record<string, unknown>): Partial<LlmCallConfig> {
    const route: ModelRoute = { ...this.route }
    const provider = optionalString(params, 'provider')
    const model = optionalString(params, 'model')
    if (provider) route.provider = provider
    if (model) route.model = model
    return route
  }

  private initialize(params: Record<string, unknown>): InitializeResult {
    if (this.closing) throw RpcError.refused('SHUTTING_DOWN', 'the server is shutting down')
    optionalInteger(params, 'protocolVersion')
    const cwd = optionalString(params, 'cwd')
    const route: ModelRoute = {}
    const provider = optionalString(params, 'provider')
    const model = optionalString(params, 'model')
    if (provider) route.provider = provider
    if (model) route.model = model
    const base = launcherCwd(this.ctx) ?? process.cwd()
    this.route = route
    this.init = {
      protocolVersion: RPC_PROTOCOL_VERSION,
      serverInfo: { name: SERVER_NAME, version: SERVER_VERSION },
      cwd: cwd === undefined ? base : resolve(base, cwd),
      model: this.defaultModel(route),
      capabilities: {
        persistence: Boolean(this.ctx.get('sessionPersistence')),
        approvals: Boolean(this.ctx.get('approval')),
        questions: Boolean(this.questionSeam()),
      },
    }
    return this.init
  }

  /** What a session created with `route` uses: the profile's agent settings under the route, resolved by `ctx.llm`. */
  private defaultModel(route: ModelRoute): ResolvedModel {
    const config = { ...this.ctx.agents.defaultModel(), ...route }
    const llm = this.ctx.get('llm')
    if (!llm) return { provider: config.provider ?? '', model: config.model ?? '' }
    const { provider, model, reasoningEffort } = llm.resolveCall(config)
    return reasoningEffort === undefined ? { provider, model } : { provider, model, reasoningEffort }
  }

  /** Creates an agent on `session` (or a fresh one); teardown waits for creations in progress. */
  private async attach(session: Session | undefined, params: Record<string, unknown>, ownsSession: boolean) {
    const id = randomUUID()
    this.ownAgents.add(id)
    const cwd = session ? undefined : this.resolveCwd(optionalString(params, 'cwd'))
    const creating = this.ctx.agents.create({ id, session, cwd, model: this.modelOf(params) })
    this.attaching.add(creating)
    let agent: Agent
    try {
      agent = await creating
    } finally {
      this.attaching.delete(creating)
    }
    this.attached.set(agent.session.id, { agent, ownsSession })
    this.reportStatus(agent)
    return agent
  }

  private async sessionCreate(params: Record<string, unknown>) {
    const agent = await this.attach(undefined, params, false)
    return { sessionId: agent.session.id, cwd: agent.session.header.cwd }
  }

  private persistence() {
    const persistence = this.ctx.get('sessionPersistence')
    if (!persistence) {
      throw RpcError.refused('NO_PERSISTENCE', 'this runtime has no session persistence row; sessions are not durable')
    }
    return persistence
  }

  private async sessionResume(params: Record<string, unknown>) {
    const sessionId = requireString(params, 'sessionId')
    let agent = this.attached.get(sessionId)?.agent
    if (!agent) {
      if (this.ctx.sessions.get(sessionId)) {
        throw RpcError.refused(
          'SESSION_BUSY',
          `session ${sessionId} is live in this process but not on this connection`,
          {
            sessionId,
          },
        )
      }
      const session = await this.persistence().resume(sessionId)
      try {
        agent = await this.attach(session, params, true)
      } catch (error) {
        this.ctx.sessions.close(session)
        throw error
      }
    }
    return { sessionId, cwd: agent.session.header.cwd, eventCount: agent.session.length }
  }

  private async sessionList(params: Record<string, unknown>): Promise<SessionListResult> {
    const offset = decodeCursor(optionalString(params, 'cursor'))
    const limit = optionalInteger(params, 'limit', 1) ?? 100
    const query = this.ctx.get('sessionQuery')
    const durable = query ? await query.list() : []
    const all: SessionSummary[] = durable.map((summary) => ({
      sessionId: summary.id,
      cwd: summary.cwd,
      ...(summary.title ? { title: summary.title } : {}),
      createdAt: summary.createdAt,
      updatedAt: summary.updatedAt,
      ...(summary.parentSession ? { parentSessionId: summary.parentSession } : {}),
      eventCount: summary.eventCount,
      attached: this.attached.has(summary.id),
    }))
    // Attached sessions whose first write has not landed yet.
    for (const { agent } of this.attached.values()) {
      if (all.some((summary) => summary.sessionId === agent.session.id)) continue
      const header = agent.session.header
      all.unshift({
        sessionId: header.id,
        cwd: header.cwd,
        createdAt: header.createdAt,
        updatedAt: agent.session.events.at(-1)?.time ?? header.createdAt,
        ...(header.parentSession ? { parentSessionId: header.parentSession } : {}),
        eventCount: agent.session.length,
        attached: true,
      })
    }
    const data = all.slice(offset, offset + limit)
    const next = offset + limit
    return next < all.length ? { data, nextCursor: String(next) } : { data }
  }

  private async sessionFork(params: Record<string, unknown>) {
    const sessionId = requireString(params, 'sessionId')
    const at = optionalInteger(params, 'at')
    const live = this.attached.get(sessionId)?.agent.session
    const source = live ?? (await this.persistence().read(sessionId))
    const child = this.ctx.sessions.fork(source, at)
    try {
      await this.attach(child, params, true)
    } catch (error) {
      this.ctx.sessions.close(child)
      throw error
    }
    return { sessionId: child.id, parentSessionId: sessionId, cwd: child.header.cwd }
  }

  private agentOf(params: Record<string, unknown>): Agent {
    const sessionId = requireString(params, 'sessionId')
    const attached = this.attached.get(sessionId)
    if (!attached) {
      throw RpcError.refused(
        'SESSION_NOT_ATTACHED',
        `session ${sessionId} is not open on this connection; session/create or session/resume it first`,
        { sessionId },
      )
    }
    return attached.agent
  }

  private queue(params: Record<string, unknown>, kind: 'followup' | 'steer'): PromptResult {
    const text = params.text
    if (typeof text !== 'string' || !text.trim()) throw RpcError.invalidParams('"text" must be a non-empty string')
    const agent = this.agentOf(params)
    const receipt = kind === 'followup' ? agent.followup(text) : agent.steer(text)
    return { sessionId: agent.session.id, messageId: receipt.id, target: receipt.target }
  }

  /** A human /command for an attached session (`ctx.commands`): runs without a model turn. */
  private async commandRun(params: Record<string, unknown>): Promise<CommandRunResult> {
    const line = requireString(params, 'line')
    const agent = this.agentOf(params)
    const commands = this.ctx.get('commands') as CommandsService | undefined
    if (!commands) {
      throw RpcError.refused('COMMANDS_UNAVAILABLE', 'this profile has no commands row (interaction-commands)', {})
    }
    const outcome = await commands.dispatch(line, { session: agent.session, agent })
    return { sessionId: agent.session.id, ...outcome }
  }

  private async cancel(params: Record<string, unknown>) {
    const agent = this.agentOf(params)
    await agent.cancel('cancelled by the client')
    return { sessionId: agent.session.id }
  }

  private approvalRespond(params: Record<string, unknown>) {
    const requestId = requireString(params, 'requestId')
    const decision = requireString(params, 'decision')
    if (decision !== 'allowed-once' && decision !== 'rejected') {
      throw RpcError.invalidParams('"decision" must be "allowed-once" or "rejected"')
    }
    const reason = optionalString(params, 'reason')
    const pending = this.approvals.get(requestId)
    if (!pending) {
      throw RpcError.refused('APPROVAL_NOT_FOUND', `no pending approval request ${requestId} (answered or cancelled)`, {
        requestId,
      })
    }
    pending.resolve(reason === undefined ? { decision } : { decision, reason })
    return {}
  }

  private questionRespond(params: Record<string, unknown>) {
    const questionId = requireString(params, 'questionId')
    const answer = params.answer
    if (typeof answer !== 'string') throw RpcError.invalidParams('"answer" must be a string')
    const settle = this.questions.get(questionId)
    if (!settle) {
      throw RpcError.refused('QUESTION_NOT_FOUND', `no pending question ${questionId} (answered or cancelled)`, {
        questionId,
      })
    }
    settle({ status: 'answered', answer })
    return {}
  }

  private async shutdown() {
    await this.teardown()
    // Answer first, then end: the reply is the last line this connection writes.
    void this.close()
    return {}
  }

  /** Tears down, lets every request received so far be answered, then stops writing. */
  close(): Promise<void> {
    this.finishing ??= this.teardown()
      .then(() => this.endpoint.drained())
      .then(() => this.finish())
    return this.finishing
  }

  private finish(): void {
    this.endpoint.stopWriting()
    this.resolveClosed()
  }

  /** Cancels pending approvals, disposes the agents, flushes and closes the sessions. Idempotent. */
  private teardown(): Promise<void> {
    this.closing ??= (async () => {
      for (const pending of [...this.approvals.values()]) pending.resolve({ decision: 'cancelled' })
      for (const settle of [...this.questions.values()])
        settle({ status: 'cancelled', reason: 'the client disconnected' })
      await Promise.allSettled([...this.attaching])
      const attached = [...this.attached.values()]
      this.attached.clear()
      await releaseAgents(this.ctx.sessions, attached, {
        reason: 'the client disconnected',
        log: (line) => this.log(line),
      })
      for (const dispose of this.disposers.splice(0).reverse()) dispose()
    })()
    return this.closing
  }
}

function launcherCwd(ctx: Context): string | undefined {
  return (ctx.get('launcher') as { config?: { cwd?: string } } | undefined)?.config?.cwd
}

function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0
  const offset = Number(cursor)
  if (!Number.isInteger(offset) || offset < 0) throw RpcError.invalidParams('"cursor" is not a cursor this server gave')
  return offset
}

export default RpcServerService
