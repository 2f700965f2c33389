// The `dsh rpc` server row: one connection per stream pair; each connection owns the agents it
// creates (one per session it creates, resumes or forks) and routes approval questions to its client.
import { isAbsolute, resolve } from 'node:path'
import type { Agent } from '@dsh/agent'
import type {} from '@dsh/composition'
import { type Context, HarnessError } from '@dsh/kernel'
import type { Session } from '@dsh/session'
import { SessionHost } from '../host/index.js'
import type { WireScope } from '../wire/operation.js'
import { type OperationName, operations, runOperation } from '../wire/operations.js'
import { pendingNotifications } from '../wire/pending.js'
import { type RpcConnection, type RpcServeOptions, RpcServer } from './index.js'
import { JsonRpcEndpoint, optionalInteger, optionalString, RpcError, type RpcHandler } from './jsonrpc.js'
import {
  type AgentStatusNotification,
  type InitializeResult,
  type ModelRoute,
  type ResolvedModel,
  RPC_PROTOCOL_VERSION,
  type RpcNotifications,
} from './protocol.js'

/** The methods of the connection itself, outside the wire table: the handshake and the goodbye. */
export const CONNECTION_METHODS = ['initialize', 'shutdown'] as const

/** The RPC methods the wire table puts on this wire. */
export const RPC_OPERATIONS = (Object.keys(operations) as OperationName[]).filter(
  (name) => operations[name].rpc === true,
)

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
      on: pendingNotifications((method, params) => this.notify(method, params)),
    })
    const scope: WireScope = {
      ctx,
      wire: 'rpc',
      cwd: (cwd) => this.resolveCwd(cwd),
      model: (route) => ({ ...this.route, ...route }),
      remote: false,
      loopback: true,
      cancelReason: 'cancelled by the client',
      attached: (agent) => this.reportStatus(agent),
    }
    const handlers: Record<string, RpcHandler> = {
      initialize: (p) => this.initialize(p),
      shutdown: () => this.shutdown(),
    }
    for (const name of RPC_OPERATIONS) {
      handlers[name] = (params) => this.ready(() => runOperation(name, this.host, params, scope).catch(invalidParams))
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

/** A schema refusal is JSON-RPC's invalid params (-32602), as the hand checks answered before. */
function invalidParams(error: unknown): never {
  if (HarnessError.is(error) && error.code === 'INVALID_PARAMS') throw RpcError.invalidParams(error.message)
  throw error
}

export default RpcServerService
