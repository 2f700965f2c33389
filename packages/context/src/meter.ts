// @dsh/context/meter: `ctx.tokenMeter`. Reads a session's next-request size from its log: the
// provider usage of the last answer plus an estimate of what the surface gained since, or a full
// estimate of the current surface when a replacement made the usage stale. Emits `context/pressure`
// when a session's level (thresholds reached) changes.
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type { Usage } from '@dsh/llm'
import {
  type AnySessionEvent,
  isSurfaceEvent,
  type Session,
  type SessionEvent,
  type SessionEventMap,
} from '@dsh/session'
import {
  CHARS_PER_TOKEN,
  estimateMessage,
  estimateRequest,
  type MeasureOptions,
  type RequestShape,
  type TokenMeter,
  type TokenReading,
} from './index.js'

export interface TokenMeterConfig {
  /** Caps the context window of every model (tokens); the smaller of this and the catalog's value is used. */
  contextWindow?: number
  /** Ascending shares of the window at which `context/pressure` fires. Default [0.5, 0.75, 0.9]. */
  thresholds?: number[]
  /** Characters per token of the estimate. Default 4. */
  charsPerToken?: number
}

function checkConfig(config: TokenMeterConfig): void {
  const problems: string[] = []
  const { contextWindow, thresholds, charsPerToken } = config
  if (contextWindow !== undefined && (!Number.isInteger(contextWindow) || contextWindow <= 0))
    problems.push('contextWindow must be a positive integer')
  if (
    thresholds !== undefined &&
    (!Array.isArray(thresholds) ||
      thresholds.some((t, i) => typeof t !== 'number' || t <= 0 || (i > 0 && t <= (thresholds[i - 1] as number))))
  )
    problems.push('thresholds must be ascending positive numbers')
  if (charsPerToken !== undefined && (typeof charsPerToken !== 'number' || charsPerToken <= 0))
    problems.push('charsPerToken must be a positive number')
  if (problems.length > 0) {
    throw new HarnessError('INVALID_CONTEXT_CONFIG', `token-meter: ${problems.join('; ')}`, { problems })
  }
}

/** The part of `ctx.commands` this module uses. */
interface CommandRegistry {
  register(spec: {
    name: string
    description: string
    run(args: string, target: { session?: Session }): Promise<unknown>
  }): () => void
}

interface Cached {
  length: number
  key: string
  reading: TokenReading
}

const WATCHED = new Set(['user/message', 'assistant/message', 'tool/result', 'request/context'])

export class TokenMeterService extends Service implements TokenMeter {
  static readonly provide = 'tokenMeter'
  static readonly inject = ['sessions', 'llm']
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly config: TokenMeterConfig
  readonly thresholds: readonly number[]
  readonly charsPerToken: number
  private readonly _cache = new WeakMap<Session, Cached>()
  private readonly _levels = new WeakMap<Session, number>()
  readonly home: Context

  constructor(ctx: Context, config: TokenMeterConfig = {}) {
    const checked = config ?? {}
    checkConfig(checked)
    super(ctx, 'tokenMeter')
    this.home = ctx
    this.config = checked
    this.thresholds = Object.freeze([...(checked.thresholds ?? [0.5, 0.75, 0.9])])
    this.charsPerToken = checked.charsPerToken ?? CHARS_PER_TOKEN
    ctx.on('session/event', (session, event) => {
      if (WATCHED.has(event.type)) this.observe(session)
    })
    // `/context` on `ctx.commands` whenever that service is active (typed structurally: this package
    // does not depend on the commands package).
    const withCommands = ctx as unknown as {
      inject(names: string[], apply: (inner: { commands: CommandRegistry }) => void): void
    }
    withCommands.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'context',
        description: 'show how full the model context of this session is',
        run: async (_args, target) => this.describe(target.session),
      })
    })
  }

  /** The `/context` command's answer for `session`. Throws `COMMAND_NEEDS_SESSION` without one. */
  describe(session: Session | undefined): { text: string; data: TokenReading } {
    if (!session)
      throw new HarnessError('COMMAND_NEEDS_SESSION', '/context needs a current session', { name: 'context' })
    const reading = this.measure(session)
    const tokens = reading.tokens.toLocaleString('en-US')
    const of = reading.window
      ? ` of ${reading.window.toLocaleString('en-US')} (${Math.round((reading.pressure ?? 0) * 100)}%)`
      : ' (context window unknown)'
    const how =
      reading.source === 'usage'
        ? `provider usage plus ${reading.estimatedTokens.toLocaleString('en-US')} estimated`
        : 'estimated from the text'
    return { text: `next request: about ${tokens} tokens${of}; ${how}`, data: reading }
  }

  estimate(request: RequestShape): number {
    return estimateRequest(request, this.charsPerToken)
  }

  windowOf(provider?: string, model?: string): number | undefined {
    const name = provider ?? this.home.llm.defaultProvider
    const catalog = this.home.llm.catalog(name)[0]
    const id = model ?? catalog?.defaultModel
    const known = catalog?.models.find((entry) => entry.id === id)?.contextWindow
    return this.cap(known)
  }

  pressure(session: Session): number | undefined {
    return this.measure(session).pressure
  }

  measure(session: Session, options: MeasureOptions = {}): TokenReading {
    const key = `${options.provider ?? ''}\u0000${options.model ?? ''}`
    const cached = this._cache.get(session)
    if (cached && cached.length === session.length && cached.key === key) return cached.reading
    const reading = this.read(session, options)
    this._cache.set(session, { length: session.length, key, reading })
    return reading
  }

  /** Measures and emits `context/pressure` when the level moved. */
  observe(session: Session): TokenReading {
    const reading = this.measure(session)
    const previous = this._levels.get(session) ?? 0
    if (reading.level !== previous) {
      this._levels.set(session, reading.level)
      this.home.emit('context/pressure', session, reading, previous)
    }
    return reading
  }

  cap(window: number | undefined): number | undefined {
    const cap = this.config.contextWindow
    if (window === undefined) return cap
    return cap === undefined ? window : Math.min(cap, window)
  }

  read(session: Session, options: MeasureOptions): TokenReading {
    const events = session.events
    /** The latest assistant message with reported usage, and its seq. */
    let anchor: { usage: Usage; seq: number } | undefined
    let header: SessionEvent<'request/header'> | undefined
    let recorded: number | undefined
    let replaced = false
    let since = 0
    for (let seq = events.length - 1; seq >= 0; seq--) {
      const event = events[seq] as AnySessionEvent
      if (!anchor && event.surfaceOp) {
        if (event.surfaceOp.op === 'replace') replaced = true
        else if (event.type === 'assistant/message' && event.data.message.usage)
          anchor = { usage: event.data.message.usage, seq: event.seq }
        else if (isSurfaceEvent(event)) since += estimateMessage(event.data.message, this.charsPerToken)
      }
      if (!header && event.type === 'request/context' && recorded === undefined) recorded = event.data.contextWindow
      if (!header && event.type === 'request/header') header = event
      if (header && (anchor || replaced)) break
    }
    const config: Partial<SessionEventMap['request/header']> = header?.data ?? {}
    const provider = options.provider ?? config.config?.provider
    const model = options.model ?? config.config?.model
    const sameModel = options.provider === undefined && options.model === undefined
    const window = sameModel && recorded !== undefined ? this.cap(recorded) : this.windowOf(provider, model)
    let tokens: number
    let estimated: number
    let usageSeq: number | undefined
    if (anchor && !replaced) {
      const usage = anchor.usage
      tokens = usage.inputTokens + usage.outputTokens + since
      estimated = since
      usageSeq = anchor.seq
    } else {
      tokens = this.estimate({
        system: config.system,
        tools: config.tools ?? [],
        messages: session.deriveMessages(),
      })
      estimated = tokens
    }
    const pressure = window ? tokens / window : undefined
    const level = pressure === undefined ? 0 : this.thresholds.filter((threshold) => pressure >= threshold).length
    const reading: TokenReading = {
      sessionId: session.id,
      tokens,
      source: usageSeq === undefined ? 'estimate' : 'usage',
      estimatedTokens: estimated,
      level,
    }
    if (usageSeq !== undefined) reading.usageSeq = usageSeq
    if (window !== undefined) reading.window = window
    if (pressure !== undefined) reading.pressure = pressure
    if (provider !== undefined) reading.provider = provider
    if (model !== undefined) reading.model = model
    return Object.freeze(reading)
  }
}

export default TokenMeterService
