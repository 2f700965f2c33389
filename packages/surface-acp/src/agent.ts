// The `dsh acp` agent row: an ACP v1 agent (via @agentclientprotocol/sdk) per stream pair. Each
// session the editor opens gets one dsh agent owned by the connection; a prompt settles when that
// agent is idle again; approvals become `session/request_permission`; disconnect tears it all down.
import { isAbsolute, resolve } from 'node:path'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import { type Agent, releaseAgent, releaseAgents } from '@dsh/agent'
import type { ApprovalAnswer, ApprovalQuestion } from '@dsh/approval'
import type {} from '@dsh/fs'
import type { CommandsService } from '@dsh/interaction'
import { type Context, HarnessError } from '@dsh/kernel'
import type { ToolCallBlock } from '@dsh/llm'
import type { Session, SessionEvent, TurnEndReason } from '@dsh/session'
import type {} from '@dsh/session-store/coordinator'
import type { ToolPresentation } from '@dsh/tools'
import { answering, checkedSessionId } from './errors.js'
import { type AcpConnection, type AcpServeOptions, AcpServer } from './index.js'
import { permissionToolCall } from './permission.js'
import { canListSessions, listSessions } from './session-list.js'
import { attachSessionMcp, MCP_CAPABILITIES, mcpConfigOf } from './session-mcp.js'
import { editorPresentation } from './tool-view.js'
import { liveUpdates, type PresentationOf, replayUpdates } from './updates.js'

const AGENT_INFO = { name: 'dsh', title: 'dsh', version: '0.1.0' }

/** One editor session: the dsh agent behind it and its in-flight prompt. */
interface Attached {
  agent: Agent
  /** Sessions restored by `session/load` (the agent closes the ones it created). */
  ownsSession: boolean
  prompt?: { cancelled: boolean; start: number }
  presentations: Map<string, ToolPresentation | undefined>
}

export class AcpServerService extends AcpServer {
  static readonly provide = 'acp'
  static readonly inject = ['agents', 'sessions']
  readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'acp')
    this.home = ctx
  }

  serve(options: AcpServeOptions): AcpConnection {
    return new AcpLink(this.home, options)
  }
}

/** Maps how a turn ended to an ACP stop reason (`error` is answered as a JSON-RPC error instead). */
export function stopReasonOf(reason: TurnEndReason | undefined, message?: string): acp.StopReason {
  switch (reason) {
    case 'max-tokens':
      return 'max_tokens'
    case 'aborted':
    case 'interrupted':
      return 'cancelled'
    case 'blocked':
      return message?.includes('step limit') ? 'max_turn_requests' : 'refusal'
    default:
      return 'end_turn'
  }
}

class AcpLink implements AcpConnection {
  readonly closed: Promise<void>
  private readonly connection: acp.AgentConnection
  private readonly attached = new Map<string, Attached>()
  private readonly disposers: Array<() => void> = []
  /** Agent creations in progress (teardown waits for them). */
  private readonly attaching = new Set<Promise<Agent>>()
  /** Every update goes through this chain, so a prompt's answer follows all of its updates. */
  private sending: Promise<void> = Promise.resolve()
  private tearingDown: Promise<void> | undefined
  private readonly log: (line: string) => void

  constructor(
    private readonly ctx: Context,
    options: AcpServeOptions,
  ) {
    this.log = options.log ?? (() => {})
    const app = acp
      .agent({ name: 'dsh' })
      .onRequest(acp.methods.agent.initialize, ({ params }) => this.initialize(params))
      .onRequest(acp.methods.agent.authenticate, () => ({}))
      .onRequest(acp.methods.agent.session.new, ({ params }) => answering(() => this.newSession(params)))
      .onRequest(acp.methods.agent.session.load, ({ params }) => answering(() => this.loadSession(params)))
      .onRequest(acp.methods.agent.session.list, ({ params }) =>
        answering(() =>
          listSessions(
            this.ctx,
            params,
            [...this.attached.values()].map(({ agent }) => agent.session),
          ),
        ),
      )
      .onRequest(acp.methods.agent.session.close, ({ params }) => answering(() => this.closeSession(params.sessionId)))
      .onRequest(acp.methods.agent.session.prompt, ({ params }) => answering(() => this.prompt(params)))
      .onNotification(acp.methods.agent.session.cancel, ({ params }) => this.cancel(params.sessionId))
    const output = Writable.toWeb(options.output as Writable) as WritableStream<Uint8Array>
    const input = Readable.toWeb(options.input as Readable) as ReadableStream<Uint8Array>
    this.connection = app.connect(acp.ndJsonStream(output, input))
    this.listen()
    this.closed = this.connection.closed.catch(() => {}).then(() => this.teardown())
  }

  close(): Promise<void> {
    this.connection.close()
    return this.closed
  }

  private listen(): void {
    this.disposers.push(
      this.ctx.on('session/event', (session, event) => {
        const attached = this.attached.get(session.id)
        if (!attached || attached.agent.session !== session) return
        for (const update of liveUpdates(
          event as SessionEvent,
          this.presentationsIn(session),
          attached.presentations,
        )) {
          this.send(session.id, update)
        }
      }),
    )
    const approval = this.ctx.get('approval')
    if (approval) this.disposers.push(approval.answer((question, signal) => this.askPermission(question, signal)))
  }

  private send(sessionId: string, update: acp.SessionUpdate): Promise<void> {
    const client = this.connection.client
    this.sending = this.sending
      .then(() => client.notify(acp.methods.client.session.update, { sessionId, update }))
      .catch((error) => this.log(`session/update failed: ${String(error)}`))
    return this.sending
  }

  /** How `session`'s calls look to the editor: absolute paths against its cwd, titles that name things. */
  private presentationsIn(session: Session): PresentationOf {
    const cwd = session.header.cwd
    const fs = this.ctx.get('fs')
    const resolvePath = (path: string) => {
      try {
        return fs ? fs.resolvePath(path, { cwd }) : resolve(cwd, path)
      } catch {
        return undefined
      }
    }
    return (call: ToolCallBlock) => {
      const presentation = this.presentationOf(call)
      return presentation && editorPresentation(presentation, cwd, resolvePath)
    }
  }

  private presentationOf(call: ToolCallBlock): ToolPresentation | undefined {
    const tool = this.ctx.get('tools')?.get(call.name)
    if (!tool?.presentation || tool.validate(call.arguments) !== undefined) return undefined
    try {
      return tool.presentation(call.arguments)
    } catch {
      return undefined
    }
  }

  private initialize(params: acp.InitializeRequest): acp.InitializeResponse {
    this.log(`initialize from ${params.clientInfo?.name ?? 'an unnamed client'} (protocol ${params.protocolVersion})`)
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: Boolean(this.ctx.get('sessionPersistence')),
        promptCapabilities: { image: false, audio: false, embeddedContext: false },
        mcpCapabilities: MCP_CAPABILITIES,
        sessionCapabilities: { close: {}, ...(canListSessions(this.ctx) ? { list: {} } : {}) },
      },
      authMethods: [],
      agentInfo: AGENT_INFO,
    }
  }

  /** Checks what `session/new` and `session/load` share; returns the editor's MCP servers as configs. */
  private checkSessionParams(params: {
    cwd: string
    mcpServers: acp.McpServer[]
    additionalDirectories?: string[] | null
  }): Record<string, unknown> {
    if (!isAbsolute(params.cwd))
      throw acp.RequestError.invalidParams({ cwd: params.cwd }, 'cwd must be an absolute path')
    if (params.additionalDirectories?.length) {
      throw acp.RequestError.invalidParams(undefined, 'additionalDirectories are not supported')
    }
    return mcpConfigOf(this.ctx, params.mcpServers)
  }

  /** Connects the session's MCP servers; on failure lets go of the agent (and the session it owns). */
  private async withSessionMcp(attached: Attached, configs: Record<string, unknown>): Promise<void> {
    try {
      await attachSessionMcp(attached.agent, configs, (line) => this.log(line))
    } catch (error) {
      await this.detach(attached, 'its MCP servers could not be attached')
      throw error
    }
  }

  /** Lets go of one session: cancels and disposes its agent (and what hangs on it), closes what it owns. */
  private async detach(attached: Attached, reason: string): Promise<void> {
    this.attached.delete(attached.agent.session.id)
    if (attached.prompt) attached.prompt.cancelled = true
    await releaseAgent(this.ctx.sessions, attached.agent, {
      reason,
      ownsSession: attached.ownsSession,
      onError: (error, step) =>
        this.log(`releasing session ${attached.agent.session.id} (${step}) failed: ${String(error)}`),
    })
  }

  private async attach(session: Session | undefined, cwd: string, ownsSession: boolean): Promise<Attached> {
    if (this.tearingDown) throw acp.RequestError.internalError(undefined, 'the connection is closing')
    const creating = this.ctx.agents.create({ session, cwd })
    this.attaching.add(creating)
    let agent: Agent
    try {
      agent = await creating
    } finally {
      this.attaching.delete(creating)
    }
    const attached: Attached = { agent, ownsSession, presentations: new Map() }
    this.attached.set(agent.session.id, attached)
    return attached
  }

  private async newSession(params: acp.NewSessionRequest): Promise<acp.NewSessionResponse> {
    const mcp = this.checkSessionParams(params)
    const attached = await this.attach(undefined, params.cwd, false)
    await this.withSessionMcp(attached, mcp)
    return { sessionId: attached.agent.session.id }
  }

  private async loadSession(params: acp.LoadSessionRequest): Promise<acp.LoadSessionResponse> {
    checkedSessionId(params.sessionId)
    const mcp = this.checkSessionParams(params)
    const persistence = this.ctx.get('sessionPersistence')
    if (!persistence) throw acp.RequestError.methodNotFound(acp.methods.agent.session.load)
    let attached = this.attached.get(params.sessionId)
    if (!attached) {
      if (this.ctx.sessions.get(params.sessionId)) {
        throw acp.RequestError.invalidRequest(
          undefined,
          `session ${params.sessionId} is open elsewhere in this process`,
        )
      }
      let session: Session
      try {
        session = await persistence.resume(params.sessionId)
      } catch (error) {
        if (HarnessError.is(error) && error.code === 'SESSION_NOT_FOUND') {
          throw acp.RequestError.sessionNotFound(params.sessionId)
        }
        throw error
      }
      try {
        attached = await this.attach(session, session.header.cwd, true)
      } catch (error) {
        this.ctx.sessions.close(session)
        throw error
      }
      await this.withSessionMcp(attached, mcp)
    }
    const events = attached.agent.session.events as SessionEvent[]
    for (const update of replayUpdates(events, this.presentationsIn(attached.agent.session))) {
      void this.send(params.sessionId, update)
    }
    await this.sending
    return {}
  }

  private promptText(blocks: acp.ContentBlock[]): string {
    const parts: string[] = []
    for (const block of blocks) {
      if (block.type === 'text') parts.push(block.text)
      else if (block.type === 'resource_link') parts.push(`[${block.name}](${block.uri})`)
      else throw acp.RequestError.invalidParams(undefined, `prompt content of type ${block.type} is not supported`)
    }
    return parts.join('\n')
  }

  private async prompt(params: acp.PromptRequest): Promise<acp.PromptResponse> {
    const attached = this.attached.get(checkedSessionId(params.sessionId))
    if (!attached) throw acp.RequestError.sessionNotFound(params.sessionId)
    if (attached.prompt) {
      throw acp.RequestError.invalidRequest(undefined, 'a prompt is already in flight for this session; wait or cancel')
    }
    const text = this.promptText(params.prompt)
    if (!text.trim()) throw acp.RequestError.invalidParams(undefined, 'the prompt is empty')
    const { agent } = attached
    const state = { cancelled: false, start: agent.session.length }
    attached.prompt = state
    try {
      // A registered human /command (`/compact`, `/plan on`...) runs through ctx.commands, no model turn.
      const commands = this.ctx.get('commands') as CommandsService | undefined
      if (commands?.isCommand(text)) {
        const outcome = await commands.dispatch(text, { session: agent.session, agent })
        if (outcome.text)
          await this.send(params.sessionId, {
            sessionUpdate: 'agent_message_chunk',
            content: { type: 'text', text: outcome.text },
          })
        await this.ctx.sessions.flush(agent.session).catch((error) => this.log(`flush failed: ${String(error)}`))
        if (!outcome.ok) throw acp.RequestError.invalidParams({ code: outcome.code ?? 'COMMAND_FAILED' }, outcome.text)
        return { stopReason: 'end_turn' }
      }
      agent.followup(text)
      await agent.whenIdle()
      await this.ctx.sessions.flush(agent.session).catch((error) => this.log(`flush failed: ${String(error)}`))
      await this.sending
      const ended = agent.session.events
        .slice(state.start)
        .filter((event) => event.type === 'turn/end')
        .at(-1)?.data as { reason: TurnEndReason; message?: string } | undefined
      if (state.cancelled) return { stopReason: 'cancelled' }
      if (ended?.reason === 'error') {
        throw acp.RequestError.internalError(
          { reason: 'error' },
          ended.message ?? this.lastError(agent.session, state.start),
        )
      }
      return { stopReason: stopReasonOf(ended?.reason, ended?.message) }
    } finally {
      attached.prompt = undefined
    }
  }

  /** The provider error message of the last failed assistant message, for an `error` ending. */
  private lastError(session: Session, start: number): string {
    for (const event of session.events.slice(start).reverse()) {
      if (event.type !== 'assistant/message') continue
      const error = (event.data as { message: { error?: { message?: string } } }).message.error
      if (error?.message) return error.message
    }
    return 'the turn ended with an error'
  }

  private async cancel(sessionId: string): Promise<void> {
    const attached = this.attached.get(sessionId)
    if (!attached?.prompt) return
    attached.prompt.cancelled = true
    await attached.agent.cancel('cancelled by the editor')
  }

  /** `session/close`: cancels the session's work and lets go of its agent, MCP servers and session. */
  private async closeSession(sessionId: string): Promise<acp.CloseSessionResponse> {
    const attached = this.attached.get(checkedSessionId(sessionId))
    if (!attached) throw acp.RequestError.sessionNotFound(sessionId)
    await this.detach(attached, 'the editor closed the session')
    return {}
  }

  /** Routes a question to the editor of the session it belongs to (else the only prompt in flight). */
  private async askPermission(question: ApprovalQuestion, signal: AbortSignal): Promise<ApprovalAnswer> {
    let sessionId = question.sessionId && this.attached.has(question.sessionId) ? question.sessionId : undefined
    if (!sessionId) {
      const busy = [...this.attached.entries()].filter(([, attached]) => attached.prompt)
      if (busy.length === 1) sessionId = busy[0]?.[0]
    }
    if (!sessionId) return { decision: 'unavailable', reason: 'no editor session to ask' }
    await this.sending
    const cancelled = new Promise<ApprovalAnswer>((resolve) => {
      if (signal.aborted) resolve({ decision: 'cancelled' })
      signal.addEventListener('abort', () => resolve({ decision: 'cancelled' }), { once: true })
    })
    const asked = this.connection.client
      .request(
        acp.methods.client.session.requestPermission,
        {
          sessionId,
          toolCall: permissionToolCall(
            question,
            question.toolCallId ? this.attached.get(sessionId)?.presentations.get(question.toolCallId) : undefined,
          ),
          options: [
            { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
            { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
          ],
        },
        { cancellationSignal: signal },
      )
      .then((response): ApprovalAnswer => {
        if (response.outcome.outcome === 'cancelled') return { decision: 'cancelled' }
        return response.outcome.optionId === 'allow-once'
          ? { decision: 'allowed-once' }
          : { decision: 'rejected', reason: 'the user rejected it in the editor' }
      })
      .catch(
        (error): ApprovalAnswer => ({ decision: 'unavailable', reason: `the editor did not answer: ${String(error)}` }),
      )
    return Promise.race([asked, cancelled])
  }

  /** Cancels and disposes the connection's agents, flushes and closes its sessions. Idempotent. */
  private teardown(): Promise<void> {
    this.tearingDown ??= (async () => {
      await Promise.allSettled([...this.attaching])
      const attached = [...this.attached.values()]
      this.attached.clear()
      await releaseAgents(this.ctx.sessions, attached, {
        reason: 'the editor disconnected',
        log: (line) => this.log(line),
      })
      for (const dispose of this.disposers.splice(0).reverse()) dispose()
    })()
    return this.tearingDown
  }
}

export default AcpServerService
