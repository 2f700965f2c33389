// @dsh/context/compaction: `ctx.compaction`. Summarises the oldest closed range of the model surface
// with a separate model call (not a turn) into one `user/message` that replaces the range and cites
// its source seqs, keeping the most recent surface verbatim. Runs when pressure reaches the threshold
// before a request (`agent/request`), once per step when a request fails with CONTEXT_OVERFLOW
// (`agent/request-error`, then retry), and by hand (`compact()`, the `/compact` command).
import type { RequestDraft, RequestErrorDecision, RequestFailure } from '@dsh/agent'
import { type Context, directService, HarnessError, Service } from '@dsh/kernel'
import { type LlmCallConfig, MessageAssembler, requestCost } from '@dsh/llm'
import type { AnySessionEvent, Session } from '@dsh/session'
import type {} from '@dsh/settings'
import {
  type Compaction,
  type CompactionErrorCode,
  type CompactionOutcome,
  type CompactionResult,
  type CompactionSpend,
  type CompactionTrigger,
  type CompactOptions,
  estimateMessage,
} from './index.js'
import { nodeText, originOf, renderNodes, safeCuts, surfaceNodes } from './surface.js'

declare module '@dsh/settings' {
  interface SettingsMap {
    /** Compact when the next request would fill this share of the model's window (the row's `threshold`). */
    'compaction.threshold': number
  }
}

export interface CompactionConfig {
  /** Compact before a request whose pressure reached `threshold`. Default true. */
  auto?: boolean
  /** Share of the context window that triggers compaction. Default 0.8. */
  threshold?: number
  /** Compact and retry once per step when a request fails with CONTEXT_OVERFLOW. Default true. */
  overflow?: boolean
  /** Share of the window kept verbatim at the recent end of the surface. Default 0.3. */
  keepRatio?: number
  /** The same after an overflow (the estimate was wrong, keep less). Default 0.15. */
  overflowKeepRatio?: number
  /** Share of the window the rendered range may take in the summary request. Default 0.5. */
  inputRatio?: number
  /** `maxTokens` of the summary call; default: the provider's default. */
  maxSummaryTokens?: number
  /** After a failed threshold compaction, steps to wait before the next threshold attempt. Default 3. */
  cooldownSteps?: number
  /** Bound on one summary call, milliseconds. Default 120000. */
  timeoutMs?: number
  /** Replaces the summariser's system prompt. */
  prompt?: string
}

const DEFAULT_PROMPT = `You compact the history of a coding agent's conversation so the agent can continue its work with a shorter context.
You receive an excerpt of the earliest part of the conversation (user requests, assistant replies, tool calls and their results; long parts are cut).
Write a summary the agent can work from without the excerpt:
- the user's goals, instructions and constraints, quoted exactly where wording matters;
- what was done: files read or changed (with paths), commands run and their outcomes, decisions and why;
- facts learned that are still needed (names, values, errors, line numbers);
- what is unfinished or was about to happen next.
Write plain text, dense and specific. Do not address the user, do not invent anything, do not repeat these instructions.`

/** The prefix of every summary node, so the model (and readers) know what it is. */
export const SUMMARY_PREFIX =
  '[Summary of the earlier conversation, written by dsh compaction. The full history is in the session log.]'

const OVERFLOW_WINDOW = /maximum context length is (\d+)/i

function positiveRatio(value: unknown, fallback: number, key: string, problems: string[]): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !(value > 0) || value > 1) problems.push(`${key} must be a number in (0, 1]`)
  return value as number
}

export class CompactionService extends Service implements Compaction {
  static readonly provide = 'compaction'
  static readonly inject = ['sessions', 'llm', 'tokenMeter']
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly config: Required<Omit<CompactionConfig, 'maxSummaryTokens' | 'prompt'>> &
    Pick<CompactionConfig, 'maxSummaryTokens'> & { prompt: string }
  readonly home: Context
  /** `ctx.tokenMeter`, asked before every request: without Cordis's per-call proxies (decision 351). */
  readonly meter: () => Context['tokenMeter']
  private readonly settings: () => Context['settings'] | undefined
  private readonly _busy = new WeakSet<Session>()

  constructor(ctx: Context, config: CompactionConfig = {}) {
    const c = config ?? {}
    const problems: string[] = []
    const resolved = {
      auto: c.auto ?? true,
      overflow: c.overflow ?? true,
      threshold: positiveRatio(c.threshold, 0.8, 'threshold', problems),
      keepRatio: positiveRatio(c.keepRatio, 0.3, 'keepRatio', problems),
      overflowKeepRatio: positiveRatio(c.overflowKeepRatio, 0.15, 'overflowKeepRatio', problems),
      inputRatio: positiveRatio(c.inputRatio, 0.5, 'inputRatio', problems),
      timeoutMs: c.timeoutMs ?? 120_000,
      cooldownSteps: c.cooldownSteps ?? 3,
      maxSummaryTokens: c.maxSummaryTokens,
      prompt: c.prompt ?? DEFAULT_PROMPT,
    }
    if (!Number.isInteger(resolved.cooldownSteps) || resolved.cooldownSteps < 0)
      problems.push('cooldownSteps must be an integer >= 0')
    if (!Number.isInteger(resolved.timeoutMs) || resolved.timeoutMs <= 0)
      problems.push('timeoutMs must be a positive integer')
    if (
      resolved.maxSummaryTokens !== undefined &&
      !(Number.isInteger(resolved.maxSummaryTokens) && resolved.maxSummaryTokens > 0)
    )
      problems.push('maxSummaryTokens must be a positive integer')
    if (problems.length > 0) {
      throw new HarnessError('INVALID_CONTEXT_CONFIG', `compaction: ${problems.join('; ')}`, { problems })
    }
    super(ctx, 'compaction')
    this.home = ctx
    const meter = directService(ctx, 'tokenMeter')
    this.meter = () => meter() ?? ctx.tokenMeter
    this.settings = directService(ctx, 'settings')
    this.config = resolved
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('compaction.threshold', {
        schema: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
        default: resolved.threshold,
        description:
          "compact the conversation when the next request would fill this share of the model's context window",
        env: 'DSH_COMPACTION_THRESHOLD',
        allowed: 'a share of the window, e.g. 0.6',
        projectSafe: true,
      })
    })
    ctx.on('agent/request', (draft: RequestDraft, next: () => Promise<RequestDraft>) => this.beforeRequest(draft, next))
    ctx.on('agent/request-error', (failure: RequestFailure, next: () => Promise<RequestErrorDecision>) =>
      this.onRequestError(failure, next),
    )
  }

  async compact(session: Session, options: CompactOptions = {}): Promise<CompactionResult> {
    const trigger: CompactionTrigger = options.trigger ?? 'manual'
    const fail = (code: CompactionErrorCode, message: string): CompactionResult => ({
      ok: false,
      trigger,
      code,
      message,
    })
    if (this._busy.has(session)) return fail('COMPACTION_BUSY', 'a compaction of this session is already running')
    if (trigger === 'manual' && session.openTail().turn !== undefined) {
      return fail('COMPACTION_TURN_OPEN', 'the session has a running turn; compact when it is idle')
    }
    const meter = this.meter()
    const model = this.modelOf(session, options)
    const reading = meter.measure(session, { provider: model.provider, model: model.model })
    const window = reading.window
    const keep = options.keepTokens ?? (window ? Math.floor(window * this.config.keepRatio) : 8_000)
    const nodes = surfaceNodes(session)
    const cuts = safeCuts(nodes)
    // Tokens of the tail [c, n-1] for each position c.
    const tail: number[] = new Array(nodes.length + 1).fill(0)
    for (let i = nodes.length - 1; i >= 0; i--) {
      tail[i] =
        (tail[i + 1] as number) + estimateMessage((nodes[i] as (typeof nodes)[number]).message, meter.charsPerToken)
    }
    const cut = cuts.find((c) => c >= 2 && (tail[c] as number) <= keep) ?? cuts.at(-1)
    // One node is not worth a model call (and re-summarising a lone summary gains nothing).
    if (cut === undefined || cut < 2) {
      return fail(
        'COMPACTION_NO_RANGE',
        'no closed range of two or more surface entries can be summarised (too little history, or a tool call without its result)',
      )
    }
    const range = nodes.slice(0, cut)
    const sourceEventSeqs = range.map((node) => node.seq)
    const budget = Math.floor((window ?? 32_000) * this.config.inputRatio * meter.charsPerToken)
    const transcript = renderNodes(range, budget)
    this._busy.add(session)
    session.append('compaction/start', {
      trigger,
      start: 0,
      end: cut - 1,
      nodes: range.length,
      tokensBefore: reading.tokens,
      window: window ?? null,
      inputChars: transcript.length,
      provider: model.provider ?? null,
      model: model.model ?? null,
    })
    // Once the model answered, every ending says what the summary request used and cost.
    let spend: CompactionSpend = {}
    const end = (outcome: CompactionOutcome) => session.append('compaction/end', { trigger, ...outcome, ...spend })
    try {
      const request: Partial<LlmCallConfig> = { ...model }
      if (this.config.maxSummaryTokens) request.maxTokens = this.config.maxSummaryTokens
      const assembler = new MessageAssembler()
      for await (const chunk of this.home.llm.stream(request, {
        system: this.config.prompt,
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'text',
                text: `The conversation so far (${range.length} entries):\n\n<conversation>\n${transcript}\n</conversation>\n\nWrite the summary now.`,
              },
            ],
          },
        ],
        signal: options.signal,
      })) {
        assembler.push(chunk)
      }
      const answer = assembler.finish()
      if (answer.usage) {
        const sent = this.home.llm.resolveCall(request)
        const prices = this.home.llm.prices(sent.provider, sent.model)
        spend = {
          model: `${sent.provider}:${sent.model}`,
          usage: answer.usage,
          cost: requestCost(answer.usage, prices),
        }
      }
      if (answer.finishReason === 'error' || answer.finishReason === 'aborted' || options.signal?.aborted) {
        const code: CompactionErrorCode =
          answer.finishReason === 'aborted' || options.signal?.aborted
            ? 'COMPACTION_ABORTED'
            : 'COMPACTION_MODEL_FAILED'
        const message = answer.error?.message ?? 'the summary call failed'
        end({ ok: false, code, message, ...(answer.error ? { llmCode: answer.error.code } : {}) })
        return fail(code, message)
      }
      const summary = answer.content
        .filter((block) => block.type === 'text')
        .map((block) => block.text)
        .join('')
        .trim()
      if (summary === '') {
        end({ ok: false, code: 'COMPACTION_EMPTY_SUMMARY', message: 'the model returned no summary text' })
        return fail('COMPACTION_EMPTY_SUMMARY', 'the model returned no summary text')
      }
      // The loop logs dynamic context only when it changes: when the latest snapshot is in the range,
      // it is carried into the summary node verbatim instead of being paraphrased away.
      const context = nodes.filter((node) => originOf(node) === 'context').at(-1)
      const carried =
        context && context.index < cut
          ? `\n\n[Current context, carried over verbatim]\n${nodeText(context.message)}`
          : ''
      const current = session.surface()
      if (sourceEventSeqs.some((seq, i) => current[i] !== seq)) {
        const message = 'the surface changed while the summary was written'
        end({ ok: false, code: 'COMPACTION_STALE', message })
        return fail('COMPACTION_STALE', message)
      }
      const node = session.append(
        'user/message',
        {
          message: { role: 'user', content: [{ type: 'text', text: `${SUMMARY_PREFIX}\n\n${summary}${carried}` }] },
          origin: 'compaction',
        },
        { surfaceOp: { op: 'replace', start: 0, end: cut - 1 }, sourceEventSeqs },
      )
      const tokensAfter = meter.measure(session, { provider: model.provider, model: model.model }).tokens
      end({ ok: true, summarySeq: node.seq, tokensAfter })
      return {
        ok: true,
        trigger,
        summarySeq: node.seq,
        start: 0,
        end: cut - 1,
        sourceEventSeqs,
        tokensBefore: reading.tokens,
        tokensAfter,
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      end({ ok: false, code: 'COMPACTION_MODEL_FAILED', message })
      return fail('COMPACTION_MODEL_FAILED', message)
    } finally {
      this._busy.delete(session)
    }
  }

  /** The summary call's model: the caller's choice, else the session's last request. */
  modelOf(session: Session, options: CompactOptions): Partial<LlmCallConfig> {
    if (options.provider || options.model) {
      const chosen: Partial<LlmCallConfig> = {}
      if (options.provider) chosen.provider = options.provider
      if (options.model) chosen.model = options.model
      return chosen
    }
    const events = session.events
    for (let seq = events.length - 1; seq >= 0; seq--) {
      const event = events[seq] as AnySessionEvent
      if (event.type !== 'request/header') continue
      const config = event.data.config
      const chosen: Partial<LlmCallConfig> = { provider: config.provider, model: config.model }
      if (config.reasoningEffort) chosen.reasoningEffort = config.reasoningEffort
      return chosen
    }
    return {}
  }

  /** The share of the window at which threshold compaction runs: the setting, else the row's config. */
  threshold(): number {
    const settings = this.settings()
    const value = settings?.has('compaction.threshold') ? settings.get('compaction.threshold') : undefined
    return typeof value === 'number' && value > 0 && value <= 1 ? value : this.config.threshold
  }

  /** Threshold compaction: after the draft is final (other listeners ran), before the loop derives messages. */
  async beforeRequest(_draft: RequestDraft, next: () => Promise<RequestDraft>): Promise<RequestDraft> {
    const result = await next()
    if (!this.config.auto) return result
    const session = result.session
    const meter = this.meter()
    const provider = result.config.provider
    const model = result.config.model
    const reading = meter.measure(session, { provider, model })
    if (!reading.window) return result
    const estimate = meter.estimateNext(session, { system: result.system, tools: result.tools })
    if (Math.max(reading.tokens, estimate) < reading.window * this.threshold()) return result
    if (this.coolingDown(session)) return result
    // Stops with the turn (the draft's signal) or after the configured time.
    const signal = AbortSignal.any([result.signal, AbortSignal.timeout(this.config.timeoutMs)])
    await this.compact(session, { trigger: 'threshold', signal, provider, model })
    return result
  }

  /** Overflow: compact harder and retry, once per step. */
  async onRequestError(
    failure: RequestFailure,
    next: () => Promise<RequestErrorDecision>,
  ): Promise<RequestErrorDecision> {
    if (!this.config.overflow || failure.error.code !== 'CONTEXT_OVERFLOW' || failure.signal.aborted) return next()
    const session = failure.session
    if (this.triedThisStep(session)) return next()
    const meter = this.meter()
    const reported = Number(OVERFLOW_WINDOW.exec(failure.error.message)?.[1])
    const known = meter.measure(session).window
    const window = Number.isFinite(reported) && reported > 0 ? Math.min(reported, known ?? reported) : known
    const keepTokens = Math.floor((window ?? meter.measure(session).tokens) * this.config.overflowKeepRatio)
    const result = await this.compact(session, { trigger: 'overflow', keepTokens, signal: failure.signal })
    return result.ok && !failure.signal.aborted ? { retry: true, reason: 'overflow compaction' } : next()
  }

  /** True when a threshold compaction failed fewer than `cooldownSteps` steps ago. */
  coolingDown(session: Session): boolean {
    const events = session.events
    let steps = 0
    for (let seq = events.length - 1; seq >= 0 && steps <= this.config.cooldownSteps; seq--) {
      const event = events[seq] as AnySessionEvent
      if (event.type === 'step/start') steps++
      else if (event.type === 'compaction/end') {
        const data = event.data
        return data.ok === false && data.trigger === 'threshold' && steps <= this.config.cooldownSteps
      }
    }
    return false
  }

  /** True when an overflow compaction was already attempted in the open step. */
  triedThisStep(session: Session): boolean {
    const events = session.events
    for (let seq = events.length - 1; seq >= 0; seq--) {
      const event = events[seq] as AnySessionEvent
      if (event.type === 'step/start') return false
      if (event.type === 'compaction/start' && event.data.trigger === 'overflow') return true
    }
    return false
  }
}

export default CompactionService
