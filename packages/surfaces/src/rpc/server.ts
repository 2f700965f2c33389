// The `dsh rpc` server row: one connection per stream pair; each connection owns the agents it
// creates (one per session it creates, resumes or forks) and routes approval questions to its client.
import { isAbsolute, resolve } from 'node:path'
import type { Agent } from '@dsh/agent'
import type {} from '@dsh/composition'
import { type Context, toJsonSafe } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import type { Session } from '@dsh/session'
import { parseAttachments, SessionHost } from '../host/index.js'
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
  type PresetListResult,
  type PromptResult,
  type ResolvedModel,
  RPC_PROTOCOL_VERSION,
  type RpcNotifications,
  type SessionCreateResult,
  type SessionListResult,
  type SessionResumeResult,
  type SessionSummary,
} from './protocol.js'

/** The preset an agent runs with, as a result field (absent without a presets row). */
function presetOf(agent: Agent): { preset?: string } {
  return agent.preset === undefined ? {} : { preset: agent.preset }
}

const SERVER_NAME = 'dsh-rpc'
const SERVER_VERSION = '0.1.0'

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
  private readonly host: SessionHost
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
    this.host = new SessionHost(ctx, {
      name: 'this connection',
      closeReason: 'the client disconnected',
      log: this.log,
      on: {
        approvalRequested: ({ id, question }) => {
          const { requestId: _id, policy: _policy, askedAt: _at, ...rest } = question
          this.notify('approval/requested', { requestId: id, ...(toJsonSafe(rest) as { summary: string }) })
        },
        approvalSettled: (requestId, answer) =>
          this.notify('approval/settled', { requestId, decision: answer.decision }),
        questionRequested: ({ id, question }) => {
          const { id: _id, askedAt: _at, ...rest } = question
          this.notify('question/requested', { questionId: id, ...(toJsonSafe(rest) as { question: string }) })
        },
        questionSettled: (questionId, answer) => this.notify('question/settled', { questionId, status: answer.status }),
      },
    })
    const handlers: Record<string, RpcHandler> = {
      initialize: (p) => this.initialize(p),
      'session/create': (p) => this.ready(() => this.sessionCreate(p)),
      'session/resume': (p) => this.ready(() => this.sessionResume(p)),
      'session/list': (p) => this.ready(() => this.sessionList(p)),
      'session/fork': (p) => this.ready(() => this.sessionFork(p)),
      'preset/list': (p) => this.ready(() => this.presetList(p)),
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
      ctx.sessions.watch((session, event) => {
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
          root: this.host.owns(agent.id),
          ...(parentSessionId ? { parentSessionId } : {}),
        })
      }),
      ctx.on('config/changed', (report) => {
        this.notify(
          'config/changed',
          report.ok ? { ok: true, added: report.added, removed: report.removed } : { ok: false, error: report.error },
        )
      }),
      ctx.on('agent/disposed', (agent) => {
        this.status.delete(agent.id)
        this.notify('agent/lifecycle', {
          type: 'disposed',
          agentId: agent.id,
          sessionId: agent.session.id,
          root: this.host.owns(agent.id),
        })
      }),
    )
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
        questions: this.host.answersQuestions,
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

  private attachOptions(params: Record<string, unknown>) {
    const preset = optionalString(params, 'preset')
    return { model: this.modelOf(params), ...(preset !== undefined ? { preset } : {}) }
  }

  private async sessionCreate(params: Record<string, unknown>): Promise<SessionCreateResult> {
    const agent = await this.host.create({
      cwd: this.resolveCwd(optionalString(params, 'cwd')),
      ...this.attachOptions(params),
    })
    this.reportStatus(agent)
    return { sessionId: agent.session.id, cwd: agent.session.header.cwd, ...presetOf(agent) }
  }

  private async sessionResume(params: Record<string, unknown>): Promise<SessionResumeResult> {
    const sessionId = requireString(params, 'sessionId')
    const agent = await this.host.resume(sessionId, this.attachOptions(params))
    this.reportStatus(agent)
    return { sessionId, cwd: agent.session.header.cwd, eventCount: agent.session.length, ...presetOf(agent) }
  }

  private async presetList(params: Record<string, unknown>): Promise<PresetListResult> {
    const fallback = this.host.defaultPreset()
    const data = await this.host.presets(this.resolveCwd(optionalString(params, 'cwd')))
    return fallback === undefined ? { data } : { data, default: fallback }
  }

  private async sessionList(params: Record<string, unknown>): Promise<SessionListResult> {
    const offset = decodeCursor(optionalString(params, 'cursor'))
    const limit = optionalInteger(params, 'limit', 1) ?? 100
    const all: SessionSummary[] = (await this.host.list()).map(({ status: _status, ...summary }) => summary)
    const data = all.slice(offset, offset + limit)
    const next = offset + limit
    return next < all.length ? { data, nextCursor: String(next) } : { data }
  }

  private async sessionFork(params: Record<string, unknown>) {
    const sessionId = requireString(params, 'sessionId')
    const at = optionalInteger(params, 'at')
    const child = await this.host.fork(sessionId, at, this.attachOptions(params))
    this.reportStatus(child)
    return { sessionId: child.session.id, parentSessionId: sessionId, cwd: child.session.header.cwd }
  }

  private agentOf(params: Record<string, unknown>): Agent {
    return this.host.agent(requireString(params, 'sessionId'))
  }

  private async queue(params: Record<string, unknown>, kind: 'followup' | 'steer'): Promise<PromptResult> {
    const text = params.text
    if (typeof text !== 'string' || !text.trim()) throw RpcError.invalidParams('"text" must be a non-empty string')
    const agent = this.agentOf(params)
    const attachments = parseAttachments(params.attachments)
    const receipt = await this.host.prompt(agent.session.id, { text, attachments }, { kind })
    return { sessionId: agent.session.id, messageId: receipt.id, target: receipt.target }
  }

  /** A human /command for an attached session (`ctx.commands`): runs without a model turn. */
  private async commandRun(params: Record<string, unknown>): Promise<CommandRunResult> {
    const line = requireString(params, 'line')
    const sessionId = requireString(params, 'sessionId')
    const outcome = await this.host.command(sessionId, line)
    return { sessionId, ...outcome }
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
    this.host.respond(requestId, reason === undefined ? { decision } : { decision, reason })
    return {}
  }

  private questionRespond(params: Record<string, unknown>) {
    const questionId = requireString(params, 'questionId')
    const answer = params.answer
    if (typeof answer !== 'string') throw RpcError.invalidParams('"answer" must be a string')
    this.host.answerQuestion(questionId, answer)
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
      await this.host.close()
      for (const dispose of this.disposers.splice(0).reverse()) dispose()
    })()
    return this.closing
  }
}

function launcherCwd(ctx: Context): string | undefined {
  return ctx.get('launcher')?.config.cwd
}

function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0
  const offset = Number(cursor)
  if (!Number.isInteger(offset) || offset < 0) throw RpcError.invalidParams('"cursor" is not a cursor this server gave')
  return offset
}

export default RpcServerService
