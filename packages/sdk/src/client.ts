// DshClient: the TypeScript client of `dsh rpc`. It spawns the runtime on first use, memoises the
// initialize handshake, turns prompts into activity intervals (`run`), fans notifications out to
// subscribers narrowed by session tree, and reaps the child process on `close()`.
import { type ChildProcess, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type {
  AgentStatusNotification,
  ApprovalDecisionValue,
  InitializeResult,
  JsonRpcErrorObject,
  PendingApproval,
  PendingQuestion,
  PromptParams,
  PromptReceipt,
  RpcMethods,
  SessionEventNotification,
} from '@dsh/surfaces/wire'
import {
  type ApprovalHandler,
  type ApprovalReply,
  type DshClientOptions,
  type DshNotification,
  DshRpcError,
  type QuestionHandler,
  type RunResult,
  type SubscribeOptions,
} from './types.js'

interface Pending {
  resolve(value: unknown): void
  reject(error: Error): void
}

const TRANSPORT_ERROR = -32099

/** The bin of an installed `@dsh/cli` next to this package, else `dsh` on PATH. */
function defaultCliPath(): string {
  try {
    const main = createRequire(import.meta.url).resolve('@dsh/cli')
    return join(dirname(main), '..', 'bin', 'dsh.js')
  } catch {
    return 'dsh'
  }
}

export class DshClient {
  private readonly options: DshClientOptions
  private child: ChildProcess | undefined
  private exited: Promise<void> | undefined
  private started: Promise<InitializeResult> | undefined
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly listeners = new Set<(n: DshNotification) => void>()
  private readonly parents = new Map<string, string>()
  /** Sessions open on the current runtime process (created, resumed or forked through this client). */
  private readonly open = new Set<string>()
  private approvalHandler: ApprovalHandler | undefined
  private questionHandler: QuestionHandler | undefined
  /** Called with each response id as it is read, in wire order relative to notifications. */
  private readonly responseHooks = new Set<(id: number) => void>()
  private closing: Promise<void> | undefined

  constructor(options: DshClientOptions = {}) {
    this.options = options
  }

  /**
   * Spawns the runtime (once) and performs `initialize` (once; memoised). When the handshake fails the
   * process is reaped and one fresh process is tried; a second failure rejects, and the next call
   * starts over.
   */
  start(): Promise<InitializeResult> {
    if (this.closing) return Promise.reject(new Error('the client is closed'))
    this.started ??= this.handshake().catch(async () => {
      await this.reap()
      return this.handshake()
    })
    this.started.catch(() => {
      this.started = undefined
    })
    return this.started
  }

  private async handshake(): Promise<InitializeResult> {
    this.spawnRuntime()
    try {
      return await this.call('initialize', { cwd: this.options.cwd, ...this.options.initialize })
    } catch (error) {
      await this.reap()
      throw error
    }
  }

  private spawnRuntime(): void {
    const cli = this.options.cliPath ?? defaultCliPath()
    const args = [...(this.options.args ?? []), 'rpc']
    const command = cli.endsWith('.js') || cli.endsWith('.mjs') ? process.execPath : cli
    const argv = command === cli ? args : [cli, ...args]
    const child = spawn(command, argv, {
      cwd: this.options.cwd,
      env: this.options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    this.child = child
    this.exited = new Promise((resolve) => child.once('close', () => resolve()))
    child.once('close', (code, signal) => {
      if (this.child === child) this.child = undefined
      this.failPending(`the dsh runtime exited (code ${code}, signal ${signal})`)
    })
    child.on('error', (error) => this.failPending(`the dsh runtime failed: ${error.message}`))
    child.stdin?.on('error', () => {})
    let buffer = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk
      let newline = buffer.indexOf('\n')
      while (newline >= 0) {
        const line = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 1)
        if (line.trim()) this.receive(line)
        newline = buffer.indexOf('\n')
      }
    })
    let errBuffer = ''
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      errBuffer += chunk
      const lines = errBuffer.split('\n')
      errBuffer = lines.pop() ?? ''
      for (const line of lines) this.options.onStderr?.(line)
    })
  }

  private failPending(message: string): void {
    for (const [id, pending] of [...this.pending]) {
      this.pending.delete(id)
      pending.reject(new DshRpcError({ code: TRANSPORT_ERROR, message }))
    }
  }

  private receive(line: string): void {
    let message: { id?: number; method?: string; params?: unknown; result?: unknown; error?: JsonRpcErrorObject }
    try {
      message = JSON.parse(line)
    } catch {
      this.options.onStderr?.(`dsh sdk: unparsable line from the runtime: ${line.slice(0, 200)}`)
      return
    }
    if (typeof message.method === 'string') {
      this.dispatch({ method: message.method, params: message.params } as DshNotification)
      return
    }
    const pending = typeof message.id === 'number' ? this.pending.get(message.id) : undefined
    if (!pending || message.id === undefined) return
    for (const hook of [...this.responseHooks]) hook(message.id)
    this.pending.delete(message.id)
    if (message.error) pending.reject(new DshRpcError(message.error))
    else pending.resolve(message.result)
  }

  private dispatch(notification: DshNotification): void {
    if (notification.method === 'session/event' || notification.method === 'agent/lifecycle') {
      const params = notification.params as { sessionId: string; parentSessionId?: string }
      if (params.parentSessionId) this.parents.set(params.sessionId, params.parentSessionId)
    }
    if (notification.method === 'approval/requested') void this.answer(notification.params)
    if (notification.method === 'question/requested') void this.reply(notification.params)
    for (const listener of [...this.listeners]) {
      try {
        listener(notification)
      } catch (error) {
        this.options.onStderr?.(`dsh sdk: a listener threw: ${String(error)}`)
      }
    }
  }

  private async answer(request: PendingApproval): Promise<void> {
    const handler = this.approvalHandler
    if (!handler) return
    try {
      const answer = await handler(request)
      if (answer === undefined) return
      const { decision, reason, ...standing } = typeof answer === 'string' ? { decision: answer } : answer
      await this.respondApproval(request.requestId, decision, reason, standing)
    } catch (error) {
      this.options.onStderr?.(`dsh sdk: the approval handler failed: ${String(error)}`)
    }
  }

  private async reply(request: PendingQuestion): Promise<void> {
    const handler = this.questionHandler
    if (!handler) return
    try {
      const answer = await handler(request)
      if (answer !== undefined) await this.respondQuestion(request.questionId, answer)
    } catch (error) {
      this.options.onStderr?.(`dsh sdk: the question handler failed: ${String(error)}`)
    }
  }

  /** Whether `sessionId` is `root` or descends from it (fork or subagent links seen so far). */
  inTree(sessionId: string, root: string): boolean {
    const seen = new Set<string>()
    for (let id: string | undefined = sessionId; id && !seen.has(id); id = this.parents.get(id)) {
      if (id === root) return true
      seen.add(id)
    }
    return false
  }

  private call<M extends keyof RpcMethods>(
    method: M,
    params: RpcMethods[M]['params'],
  ): Promise<RpcMethods[M]['result']> {
    return this.send(method, params).result
  }

  /** Writes a request; `id` lets a caller spot its response in wire order (see `run`). */
  private send<M extends keyof RpcMethods>(
    method: M,
    params: RpcMethods[M]['params'],
  ): { id: number; result: Promise<RpcMethods[M]['result']> } {
    const id = this.nextId++
    const child = this.child
    if (!child?.stdin?.writable) {
      const error = new DshRpcError({ code: TRANSPORT_ERROR, message: 'the dsh runtime is not running' })
      return { id, result: Promise.reject(error) }
    }
    const result = new Promise<RpcMethods[M]['result']>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject })
      child.stdin?.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
    })
    return { id, result }
  }

  /** The runtime's process id while it runs (a supervisor or a crash test may need it). */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined
  }

  /** Sends any request of the protocol after `start()`. */
  async request<M extends keyof RpcMethods>(
    method: M,
    params: RpcMethods[M]['params'],
  ): Promise<RpcMethods[M]['result']> {
    await this.start()
    return this.call(method, params)
  }

  /**
   * Subscribes to notifications; with `sessionId`, only those about that session's tree (the session,
   * its forks and subagent sessions; `approval/*` by their `sessionId`). The runtime notifies about
   * every session of its process; narrowing happens here. Returns the unsubscribe function.
   */
  subscribe(listener: (notification: DshNotification) => void, options: SubscribeOptions = {}): () => void {
    const root = options.sessionId
    const wrapped = root
      ? (notification: DshNotification) => {
          const sessionId = (notification.params as { sessionId?: string }).sessionId
          if (sessionId && this.inTree(sessionId, root)) listener(notification)
        }
      : listener
    this.listeners.add(wrapped)
    return () => this.listeners.delete(wrapped)
  }

  /** Committed session events only, narrowed like `subscribe`. */
  onEvent(listener: (event: SessionEventNotification) => void, options: SubscribeOptions = {}): () => void {
    return this.subscribe((notification) => {
      if (notification.method === 'session/event') listener(notification.params)
    }, options)
  }

  /** Answers approval questions as they arrive (one handler; the last one set wins). */
  onApproval(handler: ApprovalHandler | undefined): void {
    this.approvalHandler = handler
  }

  /** Answers the model's questions (`ask_user`) as they arrive (one handler; the last one set wins). */
  onQuestion(handler: QuestionHandler | undefined): void {
    this.questionHandler = handler
  }

  respondQuestion(questionId: string, answer: string) {
    return this.request('question/respond', { questionId, answer })
  }

  /** Creates a session; `preset` chooses its agent preset (`listPresets` names them). */
  async createSession(params: RpcMethods['session/create']['params'] = {}) {
    const result = await this.request('session/create', params)
    this.open.add(result.sessionId)
    return result
  }

  /** Opens a durable session on this runtime (cold resume); a session already open is returned as is. */
  async resumeSession(sessionId: string) {
    const result = await this.request('session/resume', { sessionId })
    this.open.add(sessionId)
    return result
  }

  listSessions(params: RpcMethods['session/list']['params'] = {}) {
    return this.request('session/list', params)
  }

  /** The agent presets a new session can take, and the default one. */
  listPresets(params: RpcMethods['preset/list']['params'] = {}) {
    return this.request('preset/list', params)
  }

  /** Forks a session (live or durable) and opens the fork on this runtime. */
  async forkSession(sessionId: string, at?: number) {
    const result = await this.request('session/fork', at === undefined ? { sessionId } : { sessionId, at })
    this.open.add(result.sessionId)
    this.parents.set(result.sessionId, sessionId)
    return result
  }

  /**
   * What a session has used: per model tokens by kind, cost (`usd` sums the requests with a known price;
   * `unknownRequests` counts the others), time waiting on the model and tools, and `context` (how full
   * the next request is, of the model's window).
   */
  usage(sessionId: string) {
    return this.request('session/usage', { sessionId })
  }

  /** The user's status line (`statusline.command`) for an open session; `configured: false` without one. */
  statusLine(sessionId: string) {
    return this.request('session/status-line', { sessionId })
  }

  /** The messages a rewind can go back to (1-based `number`), each with the files its turn changed. */
  async rewindPoints(sessionId: string) {
    return (await this.request('session/rewind-points', { sessionId })).points
  }

  /**
   * Rewinds an idle session to user message `point`: `files` writes the workspace back, `conversation`
   * forks before the message (opened on this runtime; `text` is the message to edit), `both` does both.
   * `files.code === 'REWIND_CONFLICT'` means nothing changed: `files.conflicts` were edited by someone
   * else; send `overwrite: true` to replace them too.
   */
  async rewind(
    sessionId: string,
    point: number,
    options: { mode?: 'both' | 'files' | 'conversation'; overwrite?: boolean } = {},
  ) {
    const result = await this.request('session/rewind', { sessionId, point, ...options })
    if (result.previousSessionId) {
      this.open.add(result.sessionId)
      this.parents.set(result.sessionId, sessionId)
    }
    return result
  }

  /**
   * Queues `text` for the session's next turn; resolves with the receipt at once. `attachments`:
   * files (`{ path }`, read by the runtime) or bytes (`{ data: <base64>, mimeType?, name? }`).
   */
  prompt(sessionId: string, text: string, attachments?: PromptParams['attachments']): Promise<PromptReceipt> {
    return this.request('prompt', attachments ? { sessionId, text, attachments } : { sessionId, text })
  }

  /** Queues `text` for the next step of the running turn (or the next turn). */
  steer(sessionId: string, text: string): Promise<PromptReceipt> {
    return this.request('steer', { sessionId, text })
  }

  /** Runs a human /command (`/compact`, `/plan on`, `/goal ...`) for the session, without a model turn. */
  command(sessionId: string, line: string) {
    return this.request('command/run', { sessionId, line })
  }

  /** Cancels the session's running activity; resolves once its agent is idle. */
  cancel(sessionId: string) {
    return this.request('cancel', { sessionId })
  }

  respondApproval(
    requestId: string,
    decision: ApprovalDecisionValue,
    reason?: string,
    standing: Pick<ApprovalReply, 'grant' | 'rule'> = {},
  ) {
    return this.request('approval/respond', {
      requestId,
      decision,
      ...(reason === undefined ? {} : { reason }),
      ...(standing.grant ? { grant: standing.grant } : {}),
      ...(standing.rule ? { rule: standing.rule } : {}),
    })
  }

  /**
   * Prompts a session (a new one unless `sessionId` is given; a durable one not yet open here is
   * resumed) and waits for its **activity interval**: from the prompt's receipt to the next time the
   * session's agent reports whole-agent `idle`. The result's `text` is the last committed assistant
   * text of the root session in that interval. The interval is not causally tied to this prompt: it
   * also covers steering, queued follow-ups and descendant activity that happen in it, and if another
   * prompt was already running, it ends when both are done. `preset` applies to the new session only.
   */
  async run(
    text: string,
    options: { sessionId?: string; attachments?: PromptParams['attachments']; preset?: string } = {},
  ): Promise<RunResult> {
    await this.start()
    let sessionId = options.sessionId
    if (!sessionId) {
      sessionId = (await this.createSession(options.preset === undefined ? {} : { preset: options.preset })).sessionId
    } else if (!this.open.has(sessionId)) await this.resumeSession(sessionId)
    const root = sessionId
    const events: SessionEventNotification[] = []
    // The receipt is noticed in wire order, so an `idle` read before it (an earlier activity) is ignored.
    let receiptSeen = false
    let promptId = -1
    let idleAfterReceipt!: () => void
    const idle = new Promise<void>((resolve) => {
      idleAfterReceipt = resolve
    })
    const hook = (id: number) => {
      if (id === promptId) receiptSeen = true
    }
    this.responseHooks.add(hook)
    const unsubscribe = this.subscribe(
      (notification) => {
        if (notification.method === 'session/event') events.push(notification.params)
        else if (notification.method === 'agent/status') {
          const status = notification.params as AgentStatusNotification
          if (receiptSeen && status.sessionId === root && status.status === 'idle') idleAfterReceipt()
        }
      },
      { sessionId: root },
    )
    const gone = new Promise<never>((_, reject) => {
      void this.exited?.then(() =>
        reject(new DshRpcError({ code: TRANSPORT_ERROR, message: 'the dsh runtime exited during run()' })),
      )
    })
    gone.catch(() => {}) // observed only while racing; later exits must not be unhandled
    let receipt: PromptReceipt
    try {
      const attachments = options.attachments
      const sent = this.send('prompt', attachments ? { sessionId: root, text, attachments } : { sessionId: root, text })
      promptId = sent.id
      receipt = await sent.result
      await Promise.race([idle, gone])
    } finally {
      unsubscribe()
      this.responseHooks.delete(hook)
    }
    let last = ''
    let reason: string | undefined
    for (const { sessionId: id, event } of events) {
      if (id !== root) continue
      if (event.type === 'assistant/message') {
        const content = event.data.message.content
        const said = content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')
        if (said.trim()) last = said
      } else if (event.type === 'turn/end') reason = event.data.reason
    }
    const result: RunResult = { sessionId: root, messageId: receipt.messageId, text: last, events }
    if (reason !== undefined) result.reason = reason
    return result
  }

  /**
   * Shuts the runtime down and resolves once its process has exited: `shutdown` (best effort), then
   * stdin EOF, then SIGTERM, then SIGKILL, each after `closeStepMs` without an exit. On Windows the
   * signals are both a forced termination. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.reap(true)
    return this.closing
  }

  private async reap(graceful = false): Promise<void> {
    const child = this.child
    const exited = this.exited
    if (!child || !exited) return
    const step = this.options.closeStepMs ?? 3000
    const within = (ms: number) =>
      Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
      ])
    if (graceful) {
      void this.call('shutdown', {}).catch(() => {})
      if (await within(step)) return this.forget(child)
    }
    child.stdin?.end()
    if (!(await within(step))) {
      child.kill('SIGTERM')
      if (!(await within(step))) child.kill('SIGKILL')
    }
    await exited
    this.forget(child)
  }

  private forget(child: ChildProcess): void {
    if (this.child === child) this.child = undefined
    this.open.clear()
  }
}
