// The `dsh acp` agent row: an ACP v1 agent (via @agentclientprotocol/sdk) per stream pair. Each
// session the editor opens gets one dsh agent owned by the connection; a prompt settles when that
// agent is idle again; approvals become `session/request_permission`; disconnect tears it all down.
import { isAbsolute, resolve } from 'node:path'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import type { Agent } from '@dsh/agent'
import type { ApprovalAnswer, ApprovalQuestion } from '@dsh/agent/approval'
import type { ToolPresentation } from '@dsh/agent/tools'
import { commandAction } from '@dsh/interaction'
import { type Context, HarnessError } from '@dsh/kernel'
import type { ToolCallBlock } from '@dsh/llm'
import { eventData, type Session, type TurnEndReason } from '@dsh/session'
import type {} from '@dsh/session/store/coordinator'
import type {} from '@dsh/world/fs'
import { type AttachmentInput, type LoggedEvent, type Pending, type PromptInput, SessionHost } from '../host/index.js'
import { answering, checkedSessionId } from './errors.js'
import { type AcpConnection, type AcpServeOptions, AcpServer } from './index.js'
import { limitLines, MAX_LINE_BYTES, tooLongReply } from './line-limit.js'
import { permissionToolCall } from './permission.js'
import { canListSessions, listSessions } from './session-list.js'
import { attachSessionMcp, MCP_CAPABILITIES, mcpConfigOf } from './session-mcp.js'
import { editorPresentation } from './tool-view.js'
import { liveUpdates, type PresentationOf, replayUpdates } from './updates.js'

const AGENT_INFO = { name: 'dsh', title: 'dsh', version: '0.1.0' }

/** Commands that act on a terminal chat or page (leave it, start another session): an editor has its own controls. */
const SURFACE_ONLY_COMMANDS = new Set(['exit', 'quit', 'clear', 'new'])

/** What the connection keeps per editor session (the session host keeps the agent). */
interface EditorSession {
  agent: Agent
  prompt?: { cancelled: boolean; start: number }
  presentations: Map<string, ToolPresentation | undefined>
  /** Live events that arrived before the session's replay was queued (then undefined). */
  early?: LoggedEvent[]
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
  private readonly host: SessionHost
  private readonly editorSessions = new Map<string, EditorSession>()
  /** Every update goes through this chain, so a prompt's answer follows all of its updates. */
  private sending: Promise<void> = Promise.resolve()
  private tearingDown: Promise<void> | undefined
  private readonly log: (line: string) => void

  constructor(
    private readonly ctx: Context,
    options: AcpServeOptions,
  ) {
    this.log = options.log ?? (() => {})
    this.host = new SessionHost(ctx, {
      name: 'this editor connection',
      closeReason: 'the editor disconnected',
      // ACP v1 has no request for free-form questions: `ask_user` stays unanswered here (fails closed).
      answerQuestions: false,
      log: this.log,
      on: { approvalRequested: (pending) => void this.askPermission(pending) },
    })
    const app = acp
      .agent({ name: 'dsh' })
      .onRequest(acp.methods.agent.initialize, ({ params }) => this.initialize(params))
      .onRequest(acp.methods.agent.authenticate, () => ({}))
      .onRequest(acp.methods.agent.session.new, ({ params }) => answering(() => this.newSession(params)))
      .onRequest(acp.methods.agent.session.load, ({ params }) => answering(() => this.loadSession(params)))
      .onRequest(acp.methods.agent.session.list, ({ params }) =>
        answering(() => listSessions(this.ctx, params, () => this.host.list())),
      )
      .onRequest(acp.methods.agent.session.close, ({ params }) => answering(() => this.closeSession(params.sessionId)))
      .onRequest(acp.methods.agent.session.setMode, ({ params }) => answering(() => this.setMode(params)))
      .onRequest(acp.methods.agent.session.prompt, ({ params }) => answering(() => this.prompt(params)))
      .onNotification(acp.methods.agent.session.cancel, ({ params }) => this.cancel(params.sessionId))
    const output = Writable.toWeb(options.output as Writable) as WritableStream<Uint8Array>
    // The SDK's reader would hold a line of any length; an over-long one is refused here instead.
    const input = (Readable.toWeb(options.input as Readable) as ReadableStream<Uint8Array>).pipeThrough(
      limitLines(MAX_LINE_BYTES, () => (options.output as Writable).write(tooLongReply(MAX_LINE_BYTES))),
    )
    this.connection = app.connect(acp.ndJsonStream(output, input))
    this.closed = this.connection.closed.catch(() => {}).then(() => this.teardown())
  }

  close(): Promise<void> {
    this.connection.close()
    return this.closed
  }

  /**
   * The host's `setup` of every session the editor opens: its MCP servers (their tools live in the
   * agent's layer and stop with it), its editor state, and its live updates from `since`.
   */
  private async openSession(agent: Agent, mcp: Record<string, unknown>, since: number) {
    await attachSessionMcp(agent, mcp, (line) => this.log(line))
    const sessionId = agent.session.id
    const editor: EditorSession = { agent, presentations: new Map(), early: [] }
    const subscription = await this.host.subscribe(sessionId, since, (event, session) => {
      if (editor.early) editor.early.push(event)
      else this.sendLive(editor, event, session)
    })
    this.editorSessions.set(sessionId, editor)
    return {
      replay: subscription.events,
      dispose: () => {
        subscription.dispose()
        if (editor.prompt) editor.prompt.cancelled = true
        if (this.editorSessions.get(sessionId) === editor) this.editorSessions.delete(sessionId)
      },
    }
  }

  /** Starts live updates of a session once what came before them is queued. */
  private goLive(editor: EditorSession): void {
    const early = editor.early ?? []
    editor.early = undefined
    for (const event of early) this.sendLive(editor, event, editor.agent.session)
  }

  private sendLive(editor: EditorSession, event: LoggedEvent, session: Session): void {
    for (const update of liveUpdates(event, this.presentationsIn(session), editor.presentations)) {
      void this.send(session.id, update)
    }
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
    if (!tool?.presentation) return undefined
    try {
      if (tool.validate(call.arguments) !== undefined) return undefined
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
        promptCapabilities: { image: true, audio: false, embeddedContext: true },
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
    return mcpConfigOf(params.mcpServers, Boolean(this.ctx.get('mcp')))
  }

  private async newSession(params: acp.NewSessionRequest): Promise<acp.NewSessionResponse> {
    const mcp = this.checkSessionParams(params)
    let replay: readonly LoggedEvent[] = []
    const agent = await this.host.create({
      cwd: params.cwd,
      setup: async (created) => {
        const opened = await this.openSession(created, mcp, 0)
        replay = opened.replay
        return opened.dispose
      },
    })
    const editor = this.editorSessions.get(agent.session.id)
    if (editor) {
      for (const event of replay) this.sendLive(editor, event, agent.session)
      this.goLive(editor)
    }
    const modes = await this.modesOf(agent)
    // After the answer, so the editor knows the session the update names.
    setTimeout(() => void this.announceCommands(agent.session.id), 0)
    return modes ? { sessionId: agent.session.id, modes } : { sessionId: agent.session.id }
  }

  /**
   * `available_commands_update`: the session's slash commands (name, one-line description, argument
   * synopsis as the input hint), as `/help` lists them; nothing without a commands row.
   */
  private announceCommands(sessionId: string): Promise<void> {
    const commands = this.ctx.get('commands')
    if (!commands) return Promise.resolve()
    const availableCommands: acp.AvailableCommand[] = commands
      .list()
      .filter((command) => !SURFACE_ONLY_COMMANDS.has(command.name))
      .map((command) => ({
        name: command.name,
        description: command.description,
        ...(command.usage ? { input: { hint: command.usage } } : {}),
      }))
    return this.send(sessionId, { sessionUpdate: 'available_commands_update', availableCommands })
  }

  /**
   * The session's modes: dsh's agent presets (`code`, `plan`, `ask`...), the current one being the
   * session's. Undefined when the profile has no presets row.
   */
  private async modesOf(agent: Agent): Promise<acp.SessionModeState | undefined> {
    if (agent.preset === undefined) return undefined
    const presets = await this.host.presets(agent.session.header.cwd)
    return {
      currentModeId: agent.preset,
      availableModes: presets.map((preset) => ({
        id: preset.name,
        name: preset.name,
        ...(preset.description ? { description: preset.description } : {}),
      })),
    }
  }

  /**
   * `session/set_mode`: switches the session's preset. Only before its first prompt (a session with
   * turns keeps the preset its history was made with: invalid request, code `PRESET_LOCKED`).
   */
  private async setMode(params: acp.SetSessionModeRequest): Promise<acp.SetSessionModeResponse> {
    const sessionId = checkedSessionId(params.sessionId)
    if (!this.editorSessions.has(sessionId)) throw acp.RequestError.sessionNotFound(sessionId)
    await this.host.setPreset(sessionId, params.modeId)
    await this.send(sessionId, { sessionUpdate: 'current_mode_update', currentModeId: params.modeId })
    return {}
  }

  /**
   * `/rewind N both|conversation`: the files go back here; the conversation before the message is a new
   * session the editor opens itself (ACP lets an agent name it, not switch the editor to it): its id
   * is said, for the editor's session list (`session/load`).
   */
  private async rewindCommand(sessionId: string, data: unknown): Promise<string> {
    const request = data as { point?: number; mode?: 'both' | 'conversation'; overwrite?: boolean }
    if (typeof request.point !== 'number' || (request.mode !== 'both' && request.mode !== 'conversation'))
      return 'rewind: nothing to do'
    const result = await this.host.rewind(sessionId, {
      point: request.point,
      mode: request.mode,
      ...(request.overwrite ? { overwrite: true } : {}),
    })
    const lines = result.files ? [result.files.text] : []
    if (result.files?.code === 'REWIND_CONFLICT') lines.push(...result.files.conflicts.map((path) => `  ${path}`))
    if (result.previousSessionId)
      lines.push(
        `the conversation before message ${result.point} is session ${result.sessionId} (open it from the editor's session list; this session is kept). The message was: ${result.text ?? ''}`,
      )
    return lines.join('\n')
  }

  private async loadSession(params: acp.LoadSessionRequest): Promise<acp.LoadSessionResponse> {
    checkedSessionId(params.sessionId)
    const mcp = this.checkSessionParams(params)
    if (!this.ctx.get('sessionPersistence')) throw acp.RequestError.methodNotFound(acp.methods.agent.session.load)
    let replay: readonly LoggedEvent[] | undefined
    let agent: Agent
    try {
      agent = await this.host.resume(params.sessionId, {
        setup: async (created) => {
          const opened = await this.openSession(created, mcp, 0)
          replay = opened.replay
          return opened.dispose
        },
      })
    } catch (error) {
      if (HarnessError.is(error) && error.code === 'SESSION_NOT_FOUND') {
        throw acp.RequestError.sessionNotFound(params.sessionId)
      }
      throw error
    }
    // A session this connection already had is replayed whole again (the editor asked for it).
    for (const update of replayUpdates(replay ?? agent.session.events, this.presentationsIn(agent.session))) {
      void this.send(params.sessionId, update)
    }
    const editor = this.editorSessions.get(params.sessionId)
    if (editor) this.goLive(editor)
    void this.announceCommands(params.sessionId)
    await this.sending
    const modes = await this.modesOf(agent)
    return modes ? { modes } : {}
  }

  /** ACP content blocks as a host prompt: text and links in the text, images and embedded resources as attachments. */
  private promptInput(blocks: acp.ContentBlock[]): PromptInput {
    const parts: string[] = []
    const attachments: AttachmentInput[] = []
    for (const block of blocks) {
      if (block.type === 'text') parts.push(block.text)
      else if (block.type === 'resource_link') parts.push(`[${block.name}](${block.uri})`)
      else if (block.type === 'image') {
        attachments.push({
          data: block.data,
          mimeType: block.mimeType,
          name: block.uri ?? `image ${attachments.length + 1}`,
        })
      } else if (block.type === 'resource') {
        const resource = block.resource
        const data = 'blob' in resource ? resource.blob : Buffer.from(resource.text, 'utf8').toString('base64')
        attachments.push({ data, name: resource.uri, ...(resource.mimeType ? { mimeType: resource.mimeType } : {}) })
      } else throw acp.RequestError.invalidParams(undefined, `prompt content of type ${block.type} is not supported`)
    }
    return { text: parts.join('\n'), attachments }
  }

  private async prompt(params: acp.PromptRequest): Promise<acp.PromptResponse> {
    const attached = this.editorSessions.get(checkedSessionId(params.sessionId))
    if (!attached) throw acp.RequestError.sessionNotFound(params.sessionId)
    if (attached.prompt) {
      throw acp.RequestError.invalidRequest(undefined, 'a prompt is already in flight for this session; wait or cancel')
    }
    const input = this.promptInput(params.prompt)
    const text = input.text
    if (!text.trim() && input.attachments?.length === 0)
      throw acp.RequestError.invalidParams(undefined, 'the prompt is empty')
    const { agent } = attached
    const state = { cancelled: false, start: agent.session.length }
    attached.prompt = state
    try {
      // A human /command (`/compact`, `/plan on`...) runs through ctx.commands, no model turn; an unknown
      // one is refused. `//x` sends the literal `/x`.
      if (this.host.isCommand(text)) {
        const outcome = await this.host.command(params.sessionId, text)
        // /exit and /new act on a terminal chat or page; in an editor its own controls do that.
        const action = commandAction(outcome)
        const shown =
          action === 'rewind'
            ? await this.rewindCommand(params.sessionId, outcome.data)
            : action
              ? `/${outcome.name} does not apply here: use the editor's own ${action === 'exit' ? 'close' : 'new thread'} (this session stays resumable)`
              : outcome.text
        if (shown)
          await this.send(params.sessionId, {
            sessionUpdate: 'agent_message_chunk',
            content: { type: 'text', text: shown },
          })
        await this.ctx.sessions.flush(agent.session).catch((error) => this.log(`flush failed: ${String(error)}`))
        if (!outcome.ok) throw acp.RequestError.invalidParams({ code: outcome.code ?? 'COMMAND_FAILED' }, outcome.text)
        return { stopReason: 'end_turn' }
      }
      await this.host
        .prompt(params.sessionId, { ...input, text: this.host.typedText(text) })
        .catch((error: unknown) => {
          if (HarnessError.is(error) && error.code.startsWith('ATTACHMENT_')) {
            throw acp.RequestError.invalidParams({ code: error.code }, error.message)
          }
          throw error
        })
      await agent.whenIdle()
      await this.ctx.sessions.flush(agent.session).catch((error) => this.log(`flush failed: ${String(error)}`))
      await this.sending
      const ended = eventData(agent.session.events.slice(state.start), 'turn/end').at(-1)
      await this.reportUsage(params.sessionId)
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

  /**
   * `usage_update` after a turn: how full the context is (tokens of the window) and the session's
   * cost so far, when every request had a known price. Not sent while the window is unknown (`size`
   * is required).
   */
  private async reportUsage(sessionId: string): Promise<void> {
    const usage = await this.host.usage(sessionId).catch(() => undefined)
    const context = usage?.context
    if (!usage || context?.window === undefined) return
    const priced = usage.requests > 0 && usage.unknownRequests === 0
    await this.send(sessionId, {
      sessionUpdate: 'usage_update',
      used: context.tokens,
      size: context.window,
      ...(priced ? { cost: { amount: usage.usd, currency: 'USD' } } : {}),
    })
  }

  /** The provider error message of the last failed assistant message, for an `error` ending. */
  private lastError(session: Session, start: number): string {
    for (const event of session.events.slice(start).reverse()) {
      if (event.type !== 'assistant/message') continue
      const error = event.data.message.error
      if (error?.message) return error.message
    }
    return 'the turn ended with an error'
  }

  private async cancel(sessionId: string): Promise<void> {
    const attached = this.editorSessions.get(sessionId)
    if (!attached?.prompt) return
    attached.prompt.cancelled = true
    await attached.agent.cancel('cancelled by the editor')
  }

  /** `session/close`: cancels the session's work and lets go of its agent, MCP servers and session. */
  private async closeSession(sessionId: string): Promise<acp.CloseSessionResponse> {
    if (!this.host.attached(checkedSessionId(sessionId))) throw acp.RequestError.sessionNotFound(sessionId)
    await this.host.release(sessionId, 'the editor closed the session')
    return {}
  }

  /**
   * Routes a held approval to the editor of the session it belongs to (else the only prompt in flight)
   * and answers it with the editor's choice; the host cancels it when the turn aborts first.
   */
  private async askPermission({ id, question, signal }: Pending<ApprovalQuestion>): Promise<void> {
    const answer = (decided: ApprovalAnswer) => {
      // Settled meanwhile (the turn was cancelled, or the connection closed).
      if (this.host.approvals().some((pending) => pending.id === id)) this.host.respond(id, decided)
    }
    let sessionId = question.sessionId && this.editorSessions.has(question.sessionId) ? question.sessionId : undefined
    if (!sessionId) {
      const busy = [...this.editorSessions.entries()].filter(([, editor]) => editor.prompt)
      if (busy.length === 1) sessionId = busy[0]?.[0]
    }
    if (!sessionId) return answer({ decision: 'unavailable', reason: 'no editor session to ask' })
    await this.sending
    const decided = await this.connection.client
      .request(
        acp.methods.client.session.requestPermission,
        {
          sessionId,
          toolCall: permissionToolCall(
            question,
            question.toolCallId
              ? this.editorSessions.get(sessionId)?.presentations.get(question.toolCallId)
              : undefined,
          ),
          options: [
            { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
            // "Allow similar": the editor's "always" keeps the narrowest rule covering the call in the
            // user's settings, so the rule the person approves is the one named here.
            ...(question.suggestedRule
              ? [
                  {
                    optionId: 'allow-similar',
                    name: `Always allow ${question.suggestedRule}`,
                    kind: 'allow_always' as const,
                  },
                ]
              : []),
            { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
          ],
        },
        { cancellationSignal: signal },
      )
      .then((response): ApprovalAnswer => {
        if (response.outcome.outcome === 'cancelled') return { decision: 'cancelled' }
        if (response.outcome.optionId === 'allow-similar' && question.suggestedRule)
          return {
            decision: 'allowed-once',
            reason: `allowed in the editor, with ${question.suggestedRule} kept in the user's settings`,
            rule: { text: question.suggestedRule, scope: 'user' },
          }
        return response.outcome.optionId === 'allow-once'
          ? { decision: 'allowed-once' }
          : { decision: 'rejected', reason: 'the user rejected it in the editor' }
      })
      .catch(
        (error): ApprovalAnswer => ({ decision: 'unavailable', reason: `the editor did not answer: ${String(error)}` }),
      )
    answer(decided)
  }

  /** Cancels and disposes the connection's agents, flushes and closes its sessions. Idempotent. */
  private teardown(): Promise<void> {
    this.tearingDown ??= this.host.close()
    return this.tearingDown
  }
}

export default AcpServerService
