// One live agent of the default loop: the persistent inbox, and the driver state machine
// (idle | maintenance | running) with exactly one driver promise and a wake latch: a wake while
// running only sets the latch, and the driver loops while the latch is set, so no wake is lost and
// the turn code is never re-entered.
import { randomUUID } from 'node:crypto'
import {
  type Agent,
  type AgentInput,
  type AgentPhase,
  applySplice,
  checkSplice,
  foldInbox,
  type InboxItem,
  type InboxKind,
  type InboxReceipt,
  type InboxSplice,
  type InboxState,
  type InboxTarget,
  type SendOptions,
  toUserMessage,
} from '@dsh/agent'
import type { ToolRestriction } from '@dsh/agent/tools'
import { type Context, HarnessError } from '@dsh/kernel'
import type { LlmCallConfig, Message, ToolSchema } from '@dsh/llm'
import type { PresetComposition } from '@dsh/presets'
import type { Session } from '@dsh/session'

/** What the turn runner needs from its agent; implemented by LoopAgent. */
export interface TurnDeps {
  readonly agent: LoopAgent
  readonly root: Context
  readonly maxSteps: number
  readonly maxCost?: number | undefined
  /** Why the session may not send another request today (`budget.day`), or undefined. */
  readonly dailyRefusal?: ((session: Session) => Promise<string | undefined>) | undefined
}

/** The last request an agent sent, for the model-visible-means-logged invariant. */
export interface SentRequest {
  headerSeq: number
  system: string
  tools: readonly ToolSchema[]
  messages: readonly Message[]
}

export interface LoopAgentOptions {
  id: string
  session: Session
  ctx: Context
  root: Context
  defaultModel: Partial<LlmCallConfig>
  /** The agent's own model settings over the driver's defaults (a preset's go in between). */
  model: Partial<LlmCallConfig>
  maxSteps: number
  maxCost?: number | undefined
  dailyRefusal?: ((session: Session) => Promise<string | undefined>) | undefined
  /** The agent's own tool restrictions (a subagent filter), applied after its preset's. */
  tools: readonly ToolRestriction[]
  composition: PresetComposition | undefined
  /** Throws when the session may not switch to the preset (for `setPreset`, before anything changes). */
  checkPreset: (name: string) => Promise<void>
  /** Selects, logs and composes another preset (for `setPreset`). */
  recompose: (name: string | undefined) => Promise<PresetComposition | undefined>
  runTurn: (deps: TurnDeps, signal: AbortSignal) => Promise<void>
  onDispose: (agent: LoopAgent) => Promise<void>
}

export class LoopAgent implements Agent {
  readonly id: string
  readonly session: Session
  readonly ctx: Context
  /** The queues, rebuilt from the log on construction. */
  readonly queues: InboxState
  lastRequest: SentRequest | undefined
  /** Text of the last dynamic-context snapshot in the log (rebuilt from it on construction). */
  lastDynamic: string | undefined

  #phase: AgentPhase = 'idle'
  #driver: Promise<void> | undefined
  #latch = false
  #paused = false
  #activity: AbortController | undefined
  #disposed = false
  #disposing: Promise<void> | undefined
  #idleWaiters: Array<() => void> = []
  #composition: PresetComposition | undefined
  #model: Partial<LlmCallConfig> | undefined
  readonly #options: LoopAgentOptions

  constructor(options: LoopAgentOptions) {
    this.#options = options
    this.id = options.id
    this.session = options.session
    this.ctx = options.ctx
    this.#composition = options.composition
    this.queues = foldInbox(options.session.events)
    for (const event of options.session.events) {
      if (event.type === 'user/message' && event.data.origin === 'context') {
        this.lastDynamic = event.data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
      }
    }
  }

  /**
   * Driver defaults < the preset's model settings < the agent's own. One object, rebuilt only when the
   * preset changes: `/model` changes it in place for the next requests.
   */
  get model(): Partial<LlmCallConfig> {
    this.#model ??= { ...this.#options.defaultModel, ...this.#composition?.model, ...this.#options.model }
    return this.#model
  }

  get preset(): string | undefined {
    return this.#composition?.preset.name
  }

  get toolRestrictions(): readonly ToolRestriction[] {
    const own = this.#options.tools
    const preset = this.#composition?.tools
    return preset ? [preset, ...own] : own
  }

  async setPreset(name: string): Promise<void> {
    this.#assertLive()
    if (name === this.preset) return
    await this.#options.checkPreset(name)
    const previous = this.#composition
    // Disposed first: the new composition registers for the same agent (its skill filter, its
    // permission mode); on failure the logged preset is composed again so the agent is never bare.
    await previous?.dispose()
    this.#composition = undefined
    this.#model = undefined
    try {
      this.#composition = await this.#options.recompose(name)
    } catch (error) {
      this.#composition = await this.#options.recompose(undefined)
      throw error
    }
  }

  get phase(): AgentPhase {
    return this.#phase
  }

  get disposed(): boolean {
    return this.#disposed
  }

  runQueued(): boolean {
    if (!this.hasWork()) return false
    this.wake()
    return true
  }

  followup(input: AgentInput): InboxReceipt {
    return this.#queue('followup', input, 'next-turn', true)
  }

  steer(input: AgentInput): InboxReceipt {
    return this.#queue('steer', input, 'next-step', true)
  }

  inject(input: AgentInput): InboxReceipt {
    return this.#queue('inject', input, 'next-step', false)
  }

  send(input: AgentInput, options: SendOptions): InboxReceipt {
    return this.#queue('send', input, options.target, options.wake ?? true)
  }

  inbox(): InboxState {
    return { 'next-step': [...this.queues['next-step']], 'next-turn': [...this.queues['next-turn']] }
  }

  spliceInbox(target: InboxTarget, start: number, deleteCount: number, ...inputs: AgentInput[]): InboxItem[] {
    this.#assertLive()
    const items = inputs.map((input) => this.#item('send', input, true))
    const removed = this.splice({ target, start, deleteCount, items, reason: 'edited' })
    if (items.some((item) => item.wake)) this.wake()
    return removed
  }

  /** Logs a splice, then applies it. Throws `INBOX_SPLICE_INVALID` before logging a bad one. */
  splice(splice: InboxSplice): InboxItem[] {
    const problem = checkSplice(this.queues, splice)
    if (problem) throw new HarnessError('INBOX_SPLICE_INVALID', problem, { target: splice.target })
    this.session.append('agent/inbox/spliced', splice)
    return applySplice(this.queues, splice)
  }

  /** Removes and returns every next-step item, plus the first next-turn item when `withTurnItem`. */
  claim(withTurnItem: boolean): InboxItem[] {
    const claimed: InboxItem[] = []
    if (withTurnItem && this.queues['next-turn'].length > 0) {
      claimed.push(...this.splice({ target: 'next-turn', start: 0, deleteCount: 1, items: [], reason: 'claimed' }))
    }
    const steps = this.queues['next-step'].length
    if (steps > 0) {
      claimed.push(...this.splice({ target: 'next-step', start: 0, deleteCount: steps, items: [], reason: 'claimed' }))
    }
    return claimed
  }

  /** True when queued input should start a turn: a waking item in either queue. */
  hasWork(): boolean {
    return this.queues['next-turn'].length > 0 || this.queues['next-step'].some((item) => item.wake)
  }

  /** True when input for the running turn's next step arrived. */
  hasStepInput(): boolean {
    return this.queues['next-step'].some((item) => item.wake)
  }

  /** Starts the driver, or sets the latch when it is already running. A wake also ends a pause. */
  wake(): void {
    if (this.#disposed) return
    this.#paused = false
    this.#latch = true
    this.#ensureDriver()
  }

  /**
   * Whether the driver has something to do: a wake it has not consumed, or queued turn input (unless
   * a cancel paused it: input queued before a cancel waits for the next wake).
   */
  #shouldRun(): boolean {
    return !this.#disposed && (this.#latch || (!this.#paused && this.hasWork()))
  }

  #ensureDriver(): void {
    if (this.#driver) return
    this.#driver = this.#drive().finally(() => {
      this.#driver = undefined
      this.#setPhase('idle')
      if (this.#shouldRun()) {
        this.#ensureDriver()
        return
      }
      this.#latch = false
      for (const resolve of this.#idleWaiters.splice(0)) resolve()
    })
  }

  async #drive(): Promise<void> {
    while (this.#shouldRun()) {
      this.#latch = false
      if (!this.hasWork()) continue
      const activity = new AbortController()
      this.#activity = activity
      this.#setPhase('running')
      try {
        await this.#options.runTurn(
          {
            agent: this,
            root: this.#options.root,
            maxSteps: this.#options.maxSteps,
            maxCost: this.#options.maxCost,
            dailyRefusal: this.#options.dailyRefusal,
          },
          activity.signal,
        )
      } catch (error) {
        // The turn runner closes the log itself; an escape here is a bug, reported, never swallowed silently.
        this.#options.root.logger('agent-loop').error(error)
      } finally {
        this.#activity = undefined
      }
    }
  }

  /**
   * Queued input waits for the next wake instead of starting another turn: a turn a budget stopped
   * before it claimed its input would otherwise start again at once, and again, for ever.
   */
  holdQueued(): void {
    this.#latch = false
    this.#paused = true
  }

  async cancel(reason = 'cancelled'): Promise<void> {
    if (this.#activity) {
      // Wakes that arrived before the cancel belong to the cancelled activity; later ones run after it.
      // Queued input stays queued (nothing is dropped) but waits for the next wake.
      this.#latch = false
      this.#paused = true
      this.#setPhase('maintenance')
      this.#activity.abort(new HarnessError('AGENT_CANCELLED', reason, { agent: this.id }))
    }
    await this.whenIdle()
  }

  whenIdle(): Promise<void> {
    if (!this.#driver) return Promise.resolve()
    return new Promise((resolve) => this.#idleWaiters.push(resolve))
  }

  dispose(): Promise<void> {
    this.#disposing ??= (async () => {
      await this.cancel('agent disposed')
      this.#disposed = true
      await this.#options.onDispose(this)
    })()
    return this.#disposing
  }

  #setPhase(phase: AgentPhase): void {
    if (this.#phase === phase) return
    this.#phase = phase
    this.#options.root.emit('agent/phase', this, phase)
  }

  #assertLive(): void {
    if (this.#disposed) throw new HarnessError('AGENT_DISPOSED', `agent ${this.id} was disposed`, { agent: this.id })
  }

  #item(kind: InboxKind, input: AgentInput, wake: boolean): InboxItem {
    return { id: randomUUID(), kind, message: toUserMessage(input), wake }
  }

  #queue(kind: InboxKind, input: AgentInput, target: InboxTarget, wake: boolean): InboxReceipt {
    this.#assertLive()
    const item = this.#item(kind, input, wake)
    this.splice({ target, start: this.queues[target].length, deleteCount: 0, items: [item], reason: 'queued' })
    if (wake) this.wake()
    return { id: item.id, target }
  }
}
