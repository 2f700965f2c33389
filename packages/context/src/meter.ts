// @dsh/context/meter: `ctx.tokenMeter`. Reads a session's next-request size from its log: the
// provider usage of the last answer plus an estimate of what the surface gained since, or a full
// estimate of the current surface when a replacement made the usage stale. Emits `context/pressure`
// when a session's level (thresholds reached) changes.
// Type-only, no names: loads the `ctx.toolSearch` augmentation (decision 172); no runtime dependency.
import type {} from '@dsh/agent/tool-search'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type { Message, ToolSchema, Usage } from '@dsh/llm'
import { type AnySessionEvent, isSurfaceEvent, type RequestRecord, type Session, type SessionEvent } from '@dsh/session'
import {
  CHARS_PER_TOKEN,
  estimateMessage,
  estimateRequest,
  estimateTools,
  type MeasureOptions,
  type RequestShape,
  type TokenMeter,
  type TokenReading,
  tokensOfChars,
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

/**
 * What the meter folded from one session's log so far (the log only grows, so each read folds only
 * the events appended since): the last usage anchor and whether a replacement came after it, the
 * estimate of surface appends after it, and the last request's header and recorded window.
 */
interface Fold {
  scanned: number
  /** The last `assistant/message` carrying provider usage: the usage and its seq. */
  anchor: { usage: Usage; seq: number } | undefined
  /** A surface replacement came after the anchor (or there is none): the usage no longer describes the surface. */
  replaced: boolean
  /** Estimated tokens of the surface appends after the anchor. */
  since: number
  header: SessionEvent<'request/header'> | undefined
  /** The context window the last request's `request/context` recorded. */
  recorded: number | undefined
}

/** Running token totals of a session's derived messages, valid while its surface generation holds. */
interface Totals {
  generation: number
  count: number
  tokens: number
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
  private readonly _folds = new WeakMap<Session, Fold>()
  private readonly _totals = new WeakMap<Session, Totals>()
  /** Estimates of frozen tool lists (the tools service hands out one frozen list per version). */
  private readonly _tools = new WeakMap<readonly ToolSchema[], number>()
  readonly home: Context

  constructor(ctx: Context, config: TokenMeterConfig = {}) {
    const checked = config ?? {}
    checkConfig(checked)
    super(ctx, 'tokenMeter')
    this.home = ctx
    this.config = checked
    this.thresholds = Object.freeze([...(checked.thresholds ?? [0.5, 0.75, 0.9])])
    this.charsPerToken = checked.charsPerToken ?? CHARS_PER_TOKEN
    ctx.sessions.watch((session, event) => {
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
        ? reading.estimatedTokens > 0
          ? `as the provider counted the last request, plus about ${reading.estimatedTokens.toLocaleString('en-US')} for what came after`
          : 'as the provider counted the last request'
        : 'estimated from the text'
    const lines = [`next request: about ${tokens} tokens${of}; ${how}`, ...this.breakdown(session)]
    const compaction = this.home.get('compaction')
    const threshold = compaction?.threshold?.()
    if (threshold !== undefined)
      lines.push(
        `compaction: when a request would pass ${Math.round(threshold * 100)}% of the window${reading.window ? ` (about ${Math.round(reading.window * threshold).toLocaleString('en-US')} tokens)` : ''}; dsh config set compaction.threshold 0.6 moves it, /compact [focus] compacts now`,
      )
    return { text: lines.join('\n'), data: reading }
  }

  /**
   * What fills the window, by the last request: the system prompt, the tool schemas (each tool, MCP
   * tools by server), the conversation and its attachments, with estimated tokens.
   */
  breakdown(session: Session): string[] {
    const header = session.events.findLast((event) => event.type === 'request/header')
    const lines: string[] = []
    const fmt = (n: number) => n.toLocaleString('en-US').padStart(8)
    if (header) {
      const request = session.requestOf(header.seq)
      lines.push(`${fmt(tokensOfChars(request.system?.length ?? 0, this.charsPerToken))}  system prompt`)
      const groups = new Map<string, { tokens: number; tools: number }>()
      for (const tool of request.tools ?? []) {
        const server = /^mcp__([^_]+(?:_[^_]+)*?)__/.exec(tool.name)?.[1]
        const key = server ? `MCP server ${server}` : `tool ${tool.name}`
        const group = groups.get(key) ?? { tokens: 0, tools: 0 }
        group.tokens += estimateTools([tool], this.charsPerToken)
        group.tools++
        groups.set(key, group)
      }
      const total = [...groups.values()].reduce((sum, group) => sum + group.tokens, 0)
      const count = request.tools?.length ?? 0
      lines.push(`${fmt(total)}  tool schemas (${count} tool${count === 1 ? '' : 's'})`)
      const sorted = [...groups.entries()].sort((a, b) => b[1].tokens - a[1].tokens)
      for (const [name, group] of sorted.slice(0, 12))
        lines.push(`${fmt(group.tokens)}    ${name}${group.tools > 1 ? ` (${group.tools} tools)` : ''}`)
      if (sorted.length > 12) lines.push(`${' '.repeat(8)}    ... ${sorted.length - 12} more`)
      // Tool search: the deferred schemas the last request left out (loaded on demand by tool_search).
      const notSent = this.home.get('toolSearch')?.notSent(session)
      if (notSent && notSent.length > 0)
        lines.push(
          `${fmt(estimateTools(notSent, this.charsPerToken))}  not sent: ${notSent.length} deferred tool schema${notSent.length === 1 ? '' : 's'} (tool_search loads them on demand; tools.search off sends them all)`,
        )
    }
    const messages = session.deriveMessages()
    let images = 0
    for (const message of messages)
      for (const block of message.content as ReadonlyArray<{ type: string }>) if (block.type === 'image') images++
    lines.push(
      `${fmt(this.surfaceTokens(session))}  conversation (${messages.length} messages${images ? `, ${images} images` : ''})`,
    )
    return lines
  }

  estimate(request: RequestShape): number {
    return estimateRequest(request, this.charsPerToken)
  }

  estimateNext(session: Session, request: Omit<RequestShape, 'messages'> = {}): number {
    return (
      tokensOfChars(request.system?.length ?? 0, this.charsPerToken) +
      this.toolTokens(request.tools) +
      this.surfaceTokens(session)
    )
  }

  toolTokens(tools: readonly ToolSchema[] | undefined): number {
    if (!tools || !Object.isFrozen(tools)) return estimateTools(tools, this.charsPerToken)
    let tokens = this._tools.get(tools)
    if (tokens === undefined) {
      tokens = estimateTools(tools, this.charsPerToken)
      this._tools.set(tools, tokens)
    }
    return tokens
  }

  /** Estimated tokens of the session's derived messages: appends add to the total, a replacement restarts it. */
  surfaceTokens(session: Session): number {
    const messages = session.deriveMessages()
    let totals = this._totals.get(session)
    if (!totals || totals.generation !== session.generation || totals.count > messages.length) {
      totals = { generation: session.generation, count: 0, tokens: 0 }
      this._totals.set(session, totals)
    }
    for (; totals.count < messages.length; totals.count++) {
      totals.tokens += estimateMessage(messages[totals.count] as Message, this.charsPerToken)
    }
    return totals.tokens
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

  /** Folds the events appended since the last read into the session's fold. */
  fold(session: Session): Fold {
    let fold = this._folds.get(session)
    if (!fold) {
      fold = { scanned: 0, anchor: undefined, replaced: false, since: 0, header: undefined, recorded: undefined }
      this._folds.set(session, fold)
    }
    const events = session.events
    for (; fold.scanned < events.length; fold.scanned++) {
      const event = events[fold.scanned] as AnySessionEvent
      if (event.type === 'request/header') {
        fold.header = event
        fold.recorded = undefined
      } else if (event.type === 'request/context') {
        if (event.data.contextWindow !== undefined) fold.recorded = event.data.contextWindow
      }
      if (!event.surfaceOp || !isSurfaceEvent(event)) continue
      if (event.surfaceOp.op === 'replace') fold.replaced = true
      else if (event.type === 'assistant/message' && event.data.message.usage) {
        fold.anchor = { usage: event.data.message.usage, seq: event.seq }
        fold.replaced = false
        fold.since = 0
      } else fold.since += estimateMessage(event.data.message, this.charsPerToken)
    }
    return fold
  }

  read(session: Session, options: MeasureOptions): TokenReading {
    const { anchor, replaced, since, header, recorded } = this.fold(session)
    // The last request as sent: its system prompt and tools resolved through their content hashes.
    const request: Partial<RequestRecord> = header ? session.requestOf(header.seq) : {}
    const provider = options.provider ?? request.config?.provider
    const model = options.model ?? request.config?.model
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
      tokens = this.estimateNext(session, { system: request.system, tools: request.tools })
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
