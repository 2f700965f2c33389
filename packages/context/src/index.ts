// @dsh/context: the definitions of context management. The token estimator every part shares, the
// `ctx.tokenMeter` and `ctx.compaction` service contracts, the Cordis and session events they add,
// and the surface helpers (closed ranges, safe cuts) pruning and compaction reason about. Providers
// (meter, pruning, compaction, retry) are separate modules referenced only from rows and tests.
import type { Message, RequestCost, ToolSchema, Usage } from '@dsh/llm'
import type { Session } from '@dsh/session'

export type { SurfaceNode } from './surface.js'
export { headTail, nodeText, originOf, renderNodes, safeCuts, surfaceNodes } from './surface.js'

// ---- the estimator ----

/**
 * Characters per token of the estimate. English prose and code tokenize at roughly 3.5-4.5 characters
 * per token with BPE tokenizers; 4 is the usual planning figure. The meter prefers provider usage and
 * only estimates what was appended since the last usage, so the factor's error stays local.
 */
export const CHARS_PER_TOKEN = 4
/** Fixed cost per message (role markers, separators) in tokens. */
export const MESSAGE_OVERHEAD_TOKENS = 4
/** What an image is assumed to cost, in tokens (providers charge a few hundred to ~1,500). */
export const IMAGE_TOKENS = 1000

/** Tokens of `chars` characters of text. */
export function tokensOfChars(chars: number, charsPerToken = CHARS_PER_TOKEN): number {
  return Math.ceil(chars / charsPerToken)
}

/** Characters of one message as a model reads it (text, reasoning, tool names and arguments). */
export function messageChars(message: Message): number {
  let chars = 0
  for (const block of message.content) {
    if (block.type === 'text' || block.type === 'reasoning') chars += block.text.length
    else if (block.type === 'tool-call') chars += block.name.length + JSON.stringify(block.arguments).length
  }
  if (message.role === 'tool') chars += message.toolName.length + message.toolCallId.length
  return chars
}

/** Estimated tokens of one message. */
export function estimateMessage(message: Message, charsPerToken = CHARS_PER_TOKEN): number {
  const images = message.content.filter((block) => block.type === 'image').length
  return tokensOfChars(messageChars(message), charsPerToken) + MESSAGE_OVERHEAD_TOKENS + images * IMAGE_TOKENS
}

/** What one request carries, for the estimate. */
export interface RequestShape {
  system?: string
  tools?: readonly ToolSchema[]
  messages: readonly Message[]
}

/** Estimated tokens of tool schemas (as the JSON a request carries). */
export function estimateTools(tools: readonly ToolSchema[] | undefined, charsPerToken = CHARS_PER_TOKEN): number {
  return tools && tools.length > 0 ? tokensOfChars(JSON.stringify(tools).length, charsPerToken) : 0
}

/** Estimated input tokens of a whole request: system prompt, tool schemas (as JSON) and messages. */
export function estimateRequest(request: RequestShape, charsPerToken = CHARS_PER_TOKEN): number {
  let tokens = tokensOfChars(request.system?.length ?? 0, charsPerToken) + estimateTools(request.tools, charsPerToken)
  for (const message of request.messages) tokens += estimateMessage(message, charsPerToken)
  return tokens
}

// ---- ctx.tokenMeter ----

/** Where a reading's number comes from. */
export type ReadingSource = 'usage' | 'estimate'

/** The meter's view of one session: how big the next request will be, against which window. */
export interface TokenReading {
  sessionId: string
  /** Estimated input tokens of the next request. */
  tokens: number
  /** `usage`: provider usage of the last answer plus an estimate of what came after; `estimate`: chars only. */
  source: ReadingSource
  /** The share of `tokens` that is an estimate (everything, for source `estimate`). */
  estimatedTokens: number
  /** Seq of the `assistant/message` whose usage anchors the reading. */
  usageSeq?: number
  /** The model's context window (the smaller of the model's and the meter's configured cap), when known. */
  window?: number
  /** `tokens / window`, when the window is known. */
  pressure?: number
  /** How many of the configured thresholds `pressure` has reached (0 = below the first). */
  level: number
  /** The model the window belongs to, when known. */
  provider?: string
  model?: string
}

export interface MeasureOptions {
  /** The model the next request goes to (defaults: the last `request/header`, then the llm default). */
  provider?: string
  model?: string
}

/** `ctx.tokenMeter`: per-session token pressure, replayed from the log. */
export interface TokenMeter {
  /** The thresholds (ascending shares of the window) at which `context/pressure` fires. */
  readonly thresholds: readonly number[]
  /** Characters per token of the estimate. */
  readonly charsPerToken: number
  /** Reads the session's next-request size. Pure with respect to the log; cached per log length. */
  measure(session: Session, options?: MeasureOptions): TokenReading
  /** `measure(session).pressure`. */
  pressure(session: Session): number | undefined
  /** The context window for a model: the catalog's value capped by the meter's config. */
  windowOf(provider?: string, model?: string): number | undefined
  /** The estimator with the meter's factor. */
  estimate(request: RequestShape): number
  /**
   * `estimate` of the session's next request: its current surface with this system prompt and these
   * tools. Kept as running totals per session (a message is estimated once, tools once per frozen
   * list), so it costs what the surface gained since the last call, not the whole history.
   */
  estimateNext(session: Session, request?: Omit<RequestShape, 'messages'>): number
}

// ---- ctx.compaction ----

export type CompactionTrigger = 'threshold' | 'overflow' | 'manual'

export interface CompactOptions {
  trigger?: CompactionTrigger
  /** Tokens of recent surface kept verbatim (default: the row's `keepRatio` of the window). */
  keepTokens?: number
  /** Aborts the summary call; the attempt then ends with `COMPACTION_ABORTED`. */
  signal?: AbortSignal
  /** Provider/model of the summary call; default: the session's last request. Never another model silently. */
  provider?: string
  model?: string
}

export type CompactionResult =
  | {
      ok: true
      trigger: CompactionTrigger
      /** Seq of the replacement `user/message`. */
      summarySeq: number
      /** The surface range the summary replaced (inclusive). */
      start: number
      end: number
      sourceEventSeqs: number[]
      tokensBefore: number
      tokensAfter: number
    }
  | { ok: false; trigger: CompactionTrigger; code: CompactionErrorCode; message: string }

export type CompactionErrorCode =
  | 'COMPACTION_NO_RANGE'
  | 'COMPACTION_BUSY'
  | 'COMPACTION_TURN_OPEN'
  | 'COMPACTION_MODEL_FAILED'
  | 'COMPACTION_EMPTY_SUMMARY'
  | 'COMPACTION_ABORTED'
  | 'COMPACTION_STALE'

/** `ctx.compaction`: summarises an older closed surface range into one replacement node. */
export interface Compaction {
  /**
   * Compacts now. Resolves with the result, never rejects for model or range problems (they are
   * results, and attempts that reached the model leave `compaction/start` + `compaction/end` facts).
   * `manual` compaction refuses a session with an open turn (`COMPACTION_TURN_OPEN`).
   */
  compact(session: Session, options?: CompactOptions): Promise<CompactionResult>
  /** The share of the window at which compaction runs before a request (the `compaction.threshold` setting). */
  threshold?(): number
}

// ---- events ----

/** Data of `compaction/start`: the surface range `[start, end]` about to be summarised. */
export interface CompactionStarted {
  trigger: CompactionTrigger
  start: number
  end: number
  nodes: number
  tokensBefore: number
  window: number | null
  /** Characters of the rendered range sent to the summary call. */
  inputChars: number
  provider: string | null
  model: string | null
}

/** How a compaction attempt ended: the summary node's seq, or why it failed. */
export type CompactionOutcome =
  | { ok: true; summarySeq: number; tokensAfter: number }
  | { ok: false; code: CompactionErrorCode; message: string; llmCode?: string }

/**
 * What the summary request used and cost, once the model answered: `model` is the `provider:model` it
 * went to, `cost` as `assistant/message` logs it (`{}` when the price is unknown). Counted by `/cost`.
 */
export type CompactionSpend = { model?: string; usage?: Usage; cost?: RequestCost }

/** Data of `compaction/end`. */
export type CompactionEnded = { trigger: CompactionTrigger } & CompactionOutcome & CompactionSpend

declare module '@dsh/session' {
  interface SessionEventMap {
    'compaction/start': CompactionStarted
    'compaction/end': CompactionEnded
  }
}

declare module 'cordis' {
  interface Context {
    tokenMeter: TokenMeter
    compaction: Compaction
  }
  interface Events {
    /** The session's pressure level changed (a threshold was crossed, either way). */
    'context/pressure'(session: Session, reading: TokenReading, previousLevel: number): void
  }
}

/** Data of `recovery/retry`: one retry the recovery plugin scheduled, logged before it waits. */
export interface RecoveryRetry {
  /** 1 for the first retry of this request. */
  attempt: number
  maxAttempts: number
  code: string
  status?: number
  /** What the provider asked for (Retry-After), when it did. */
  retryAfterMs?: number
  /** How long the plugin waits before the retry. */
  delayMs: number
  message: string
}

/** Data of `recovery/give-up`: the plugin stopped retrying; the failure reaches the turn. */
export interface RecoveryGiveUp {
  code: string
  attempts: number
  reason: string
}

declare module '@dsh/session' {
  interface SessionEventMap {
    'recovery/retry': RecoveryRetry
    'recovery/give-up': RecoveryGiveUp
  }
}

/** The session event types the retry plugin declares. */
export const RECOVERY_EVENTS = ['recovery/retry', 'recovery/give-up'] as const
