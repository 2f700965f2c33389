// @dsh/agent: the Agent interface, the agent registry `ctx.agents`, and the live extension points of a
// turn. Extensions depend on this package, never on a driver such as @dsh/agent-loop.
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type { AssistantMessage, LlmCallConfig, LlmErrorData, Message, ToolSchema, UserMessage } from '@dsh/llm'
import type { Session, SessionService, TurnEndReason } from '@dsh/session'
import type { InboxItem, InboxSplice, InboxState, InboxTarget } from './inbox.js'
import type { ToolRestriction } from './tools/index.js'

export type { InboxItem, InboxKind, InboxSplice, InboxState, InboxTarget } from './inbox.js'
export { applySplice, checkSplice, emptyInbox, foldInbox } from './inbox.js'

/** `idle`: nothing to do. `maintenance`: the driver is settling (abort, dispose). `running`: a turn is active. */
export type AgentPhase = 'idle' | 'maintenance' | 'running'

/** What queueing input returns: the inbox item id, usable to find or edit it later. */
export interface InboxReceipt {
  id: string
  target: InboxTarget
}

/** Input as callers give it: plain text or a full user message. */
export type AgentInput = string | UserMessage

export interface SendOptions {
  target: InboxTarget
  /** Wake the driver (default true). */
  wake?: boolean
}

/**
 * A live agent: one driver over one session. All input goes through the persistent inbox. Methods
 * never throw for ordinary input; they throw `AGENT_DISPOSED` after `dispose()`.
 */
export interface Agent {
  readonly id: string
  readonly session: Session
  /** The agent's own scope: registrations made here (tools, prompt sections) die with the agent. */
  readonly ctx: Context
  readonly phase: AgentPhase
  readonly disposed: boolean
  /** The model configuration of this agent's requests (provider/model may be unresolved). */
  readonly model: Partial<LlmCallConfig>
  /** The preset the agent runs with (the session's `preset/selected`), when a presets row is loaded. */
  readonly preset: string | undefined
  /** Every restriction on the global tools this agent sees: its preset's policy, then its own. */
  readonly toolRestrictions: readonly ToolRestriction[]
  /**
   * Recomposes the agent with another preset (its prompt sections, tools, model, permission mode).
   * Only while the session has no turn of its own: throws `PRESET_LOCKED` after, `NO_PRESETS` without
   * a presets row, and `PRESET_NOT_FOUND` / `PRESET_INVALID` for a bad name (the agent is unchanged).
   */
  setPreset(name: string): Promise<void>
  /**
   * Runs what was left queued when the session was last closed. A resumed session does not run it by
   * itself: it waits, shown as queued, until the person sends something or calls this.
   */
  runQueued(): boolean
  /** Queues a message for the next turn and wakes the driver. */
  followup(input: AgentInput): InboxReceipt
  /** Queues a message for the next step of the running turn (or the next turn) and wakes the driver. */
  steer(input: AgentInput): InboxReceipt
  /** Queues context for the next step without waking: it rides along with the next wake. */
  inject(input: AgentInput): InboxReceipt
  send(input: AgentInput, options: SendOptions): InboxReceipt
  /** A snapshot of the queued input. */
  inbox(): InboxState
  /** Edits a queue (remove/replace/insert); logged before memory changes. Throws `INBOX_SPLICE_INVALID`. */
  spliceInbox(target: InboxTarget, start: number, deleteCount: number, ...inputs: AgentInput[]): InboxItem[]
  /** Aborts the running activity. Input queued after this call still runs. Resolves when idle. */
  cancel(reason?: string): Promise<void>
  /** Resolves when the driver is idle with nothing to do. */
  whenIdle(): Promise<void>
  /** Cancels, waits for idle, disposes the agent scope and unregisters. Idempotent. */
  dispose(): Promise<void>
}

export interface CreateAgentOptions {
  /** An existing live session (e.g. restored by persistence); otherwise a fresh one is created. */
  session?: Session
  /** Working directory recorded in a new session's header. */
  cwd?: string
  id?: string
  model?: Partial<LlmCallConfig>
  /** Bounds; a turn that reaches `maxSteps` ends `blocked`. */
  maxSteps?: number
  /**
   * A cost budget in US dollars for the session (its own requests, not a fork's seed): once the
   * logged cost reaches it, the turn ends `blocked` before its next model request (never inside a
   * tool step), and queued input stays queued. Requests without a known price count as $0 toward it.
   */
  maxCost?: number
  /**
   * The agent's preset (see `@dsh/presets`). On a session that records one, the recorded one is used
   * and another name is refused with `PRESET_LOCKED` once the session has turns of its own; on a new
   * session, this one (default: the presets row's default) is recorded. Needs a presets row
   * (`NO_PRESETS` otherwise).
   */
  preset?: string
  /** Narrows the agent's global tools further (a subagent's filter), on top of its preset's policy. */
  tools?: readonly ToolRestriction[]
}

/** A driver creates agents; `@dsh/agent-loop` is the default one. */
export interface AgentDriver {
  readonly name: string
  /** The model settings an agent gets when `create` is given none (provider/model may be unresolved). */
  readonly defaultModel?: Partial<LlmCallConfig>
  create(owner: Context, options: CreateAgentOptions): Promise<Agent>
}

// ---- live extension points of a turn (not durable: their effects are, through the log) ----

export interface PreStepInput {
  agent: Agent
  session: Session
  /** Messages claimed for this step (may be empty on a continuation step). */
  messages: UserMessage[]
  /** The inbox items those messages came from, in the same order: `kind` tells a user prompt
   * (`followup`, `send`) from a `steer`, injected context, or a turn-stopping `continuation`. */
  items: InboxItem[]
  /** True for the first step of a turn. */
  first: boolean
  step: number
}

export type PreStepDecision = { action: 'enter'; messages: UserMessage[] } | { action: 'reject'; reason: string }

export interface RequestDraft {
  agent: Agent
  session: Session
  config: Partial<LlmCallConfig>
  system: string
  /** Frozen: a listener that changes the tools sets a new list. */
  tools: readonly ToolSchema[]
  /** Aborts when the turn is cancelled: work done here (e.g. compaction) should stop with it. */
  signal: AbortSignal
}

export interface RequestFailure {
  agent: Agent
  session: Session
  error: LlmErrorData
  /** 0 for the first failure of this request. */
  attempt: number
  /** The partial message the failed stream produced. */
  partial: AssistantMessage
  signal: AbortSignal
}

/**
 * `retry`: dispatch the request again (the plugin logs why and may wait first); `reason` is recorded in
 * the retried request's `request/header` (e.g. `RATE_LIMIT`, `overflow compaction`).
 */
export type RequestErrorDecision = { retry: false } | { retry: true; reason?: string }

export interface TurnStopping {
  agent: Agent
  session: Session
  /** The reason the turn would end with. */
  reason: TurnEndReason
  steps: number
}

/** What `agent/turn-closing` listeners get: the turn is over and `turn/end` not yet appended. */
export interface TurnClosing {
  agent: Agent
  session: Session
  reason: TurnEndReason
}

/** Returned by an `agent/turn-stopping` listener to keep the turn going with one more message. */
export interface TurnContinuation {
  continue: true
  message: UserMessage
}

export interface RequestSent {
  agent: Agent
  session: Session
  /** Seq of the `request/header` event of this request. */
  headerSeq: number
  system: string
  tools: readonly ToolSchema[]
  messages: readonly Message[]
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** One change of an agent's persistent inbox (queued, claimed or edited input). */
    'agent/inbox/spliced': InboxSplice
  }
}

declare module 'cordis' {
  interface Context {
    agents: AgentsService
  }
  interface Events {
    /** Waterfall before each step: rewrite the claimed messages, or reject the step. */
    'agent/pre-step'(input: PreStepInput, next: () => Promise<PreStepDecision>): Promise<PreStepDecision>
    /** Waterfall building each request: adjust config, system prompt, tools. */
    'agent/request'(draft: RequestDraft, next: () => Promise<RequestDraft>): Promise<RequestDraft>
    /** Waterfall on a failed or aborted stream: decide whether to retry. */
    'agent/request-error'(
      failure: RequestFailure,
      next: () => Promise<RequestErrorDecision>,
    ): Promise<RequestErrorDecision>
    /** Serial, when a turn is about to end: the one place that may keep it going. */
    'agent/turn-stopping'(state: TurnStopping): Promise<TurnContinuation | undefined> | TurnContinuation | undefined
    /**
     * Serial, on every exit path of a turn, just before `turn/end`: a listener may append facts that
     * belong to the turn (the workspace checkpoint after it). It cannot keep the turn going; a
     * listener's failure is logged and the turn still ends.
     */
    'agent/turn-closing'(state: TurnClosing): Promise<void> | void
    /** After a request was dispatched, with exactly what was sent. */
    'agent/request-sent'(sent: RequestSent): void
    'agent/created'(agent: Agent): void
    'agent/phase'(agent: Agent, phase: AgentPhase): void
    'agent/disposed'(agent: Agent): void
  }
}

/**
 * What a surface does with an agent it attached when it lets go (a client disconnects, the host stops):
 * cancel it with `reason`, flush its session when it has events, dispose it, and close the session when
 * the surface created it. Never throws; each failure goes to `onError` and the next step still runs.
 */
export async function releaseAgent(
  sessions: Pick<SessionService, 'flush' | 'close'>,
  agent: Agent,
  options: { reason: string; ownsSession: boolean; onError?: (error: unknown, step: string) => void },
): Promise<void> {
  const session = agent.session
  const report = (step: string) => (error: unknown) => options.onError?.(error, step)
  await agent.cancel(options.reason).catch(report('cancel'))
  if (session.length > 0) await sessions.flush(session).catch(report('flush'))
  await agent.dispose().catch(report('dispose'))
  if (options.ownsSession) {
    try {
      sessions.close(session)
    } catch (error) {
      report('close')(error)
    }
  }
}

/**
 * Releases every agent a surface attached (in parallel, each with `releaseAgent`), then flushes all
 * sessions so nothing the surface saw is left only in memory. Never throws; failures go to `log`.
 */
export async function releaseAgents(
  sessions: Pick<SessionService, 'flush' | 'close'>,
  attached: Iterable<{ agent: Agent; ownsSession: boolean }>,
  options: { reason: string; log: (line: string) => void },
): Promise<void> {
  await Promise.all(
    [...attached].map(({ agent, ownsSession }) =>
      releaseAgent(sessions, agent, {
        reason: options.reason,
        ownsSession,
        onError: (error, step) => options.log(`${step} of session ${agent.session.id} failed: ${String(error)}`),
      }),
    ),
  )
  await sessions.flush().catch((error: unknown) => options.log(`flush failed: ${String(error)}`))
}

/** Normalises caller input to a user message. */
export function toUserMessage(input: AgentInput): UserMessage {
  return typeof input === 'string' ? { role: 'user', content: [{ type: 'text', text: input }] } : input
}

/**
 * `ctx.agents`: the live agents of this process and the driver that creates them. Agents created
 * through a plugin's context are disposed with it.
 */
export class AgentsService extends Service {
  static readonly provide = 'agents'
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly live = new Map<string, Agent>()
  readonly drivers: AgentDriver[] = []
  readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'agents')
    this.home = ctx
  }

  /** Registers a driver for the caller's lifetime; the most recent registration is used. */
  registerDriver(driver: AgentDriver): () => void {
    return this.ctx.effect(() => {
      this.drivers.push(driver)
      return () => {
        const index = this.drivers.indexOf(driver)
        if (index >= 0) this.drivers.splice(index, 1)
      }
    }, `agents.registerDriver(${driver.name})`)
  }

  /** The active driver's model settings for agents created without their own (`{}` when it has none). */
  defaultModel(): Partial<LlmCallConfig> {
    return { ...this.drivers.at(-1)?.defaultModel }
  }

  /** Creates an agent with the active driver. Throws `NO_AGENT_DRIVER` when none is registered. */
  async create(options: CreateAgentOptions = {}): Promise<Agent> {
    const driver = this.drivers.at(-1)
    if (!driver) {
      throw new HarnessError('NO_AGENT_DRIVER', 'no agent driver is active; add the agent-loop row to the profile', {})
    }
    if (options.id && this.live.has(options.id)) {
      throw new HarnessError('AGENT_EXISTS', `agent ${options.id} already exists`, { id: options.id })
    }
    const owner = this.ctx
    const agent = await driver.create(owner, options)
    owner.effect(() => {
      this.live.set(agent.id, agent)
      return async () => {
        await agent.dispose()
      }
    }, `agents.live(${agent.id})`)
    this.home.emit('agent/created', agent)
    return agent
  }

  /** Removes a disposed agent from the registry; called by drivers from `dispose()`. */
  unregister(agent: Agent): void {
    if (this.live.get(agent.id) !== agent) return
    this.live.delete(agent.id)
    this.home.emit('agent/disposed', agent)
  }

  get(id: string): Agent | undefined {
    return this.live.get(id)
  }

  list(): Agent[] {
    return [...this.live.values()]
  }
}

export default AgentsService
