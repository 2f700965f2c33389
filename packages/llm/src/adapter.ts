// The adapter contract of `ctx.llm`: what a provider plugin registers, what one model request carries,
// and the advisory catalog an adapter may publish. Types only, plus small helpers every adapter uses.
import { HarnessError } from '@dsh/kernel'
import type {
  LlmCallConfig,
  LlmErrorCode,
  LlmErrorData,
  Message,
  ReasoningEffort,
  StreamChunk,
  ToolSchema,
} from './messages.js'

/** How the model may use tools on this request. A named choice forces that tool. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string }

/** The model-visible input of one request. The call config (provider, model, effort...) travels separately. */
export interface LlmRequest {
  system?: string
  messages: readonly Message[]
  tools?: readonly ToolSchema[]
  toolChoice?: ToolChoice
  /** Aborting cancels the provider request at once; the stream then ends with a `finish: aborted` chunk. */
  signal?: AbortSignal
  /** Loads the bytes of a content-addressed image; adapters without it send a text placeholder instead. */
  loadImage?: (ref: string) => Promise<Uint8Array>
}

/** What an adapter's `stream` receives: the frozen, resolved call config and the request. */
export interface LlmDispatch {
  readonly call: Readonly<LlmCallConfig>
  readonly request: LlmRequest
}

/** One model in a provider catalog. Advisory: a model missing from the catalog is still requested. */
export interface ModelInfo {
  id: string
  label?: string
  contextWindow?: number
  maxOutputTokens?: number
  /** Explicit efforts the model accepts; absent means the adapter does not know. */
  reasoningEfforts?: ReasoningEffort[]
  /** Whether the model thinks before answering (reasons); absent means unknown. */
  reasoning?: boolean
  input?: ('text' | 'image')[]
  /** Prices in US dollars per million tokens, where the catalog knows them. */
  cost?: { input: number; output: number; cacheRead?: number; cacheWrite?: number }
}

/** What `LlmAdapter.access` reports. */
export interface ProviderAccess {
  url?: string
  /** The credential variable that overrides `url`, when there is one (`DEEPSEEK_BASE_URL`). */
  urlVariable?: string
  keyNames: readonly string[]
  keyRequired: boolean
  key?: { name: string; location: string }
  /** Why the call cannot go anywhere (no endpoint named for this model). */
  error?: string
}

export interface ProviderCatalog {
  provider: string
  defaultModel?: string
  models: ModelInfo[]
}

/**
 * A provider implementation. `stream` must never throw or reject for provider, transport or abort
 * failures: it ends with exactly one `finish` chunk (`error`/`aborted` with an `LlmErrorData`). The
 * service still guards against adapters that break this rule.
 */
export interface LlmAdapter {
  /** Short name for diagnostics, e.g. `deepseek`. */
  readonly name: string
  /** The advisory catalog for `provider` (models, context windows, capabilities) as known without I/O. */
  catalog?(provider: string): ProviderCatalog | undefined
  /**
   * The catalog once it is loaded (a library imported on first use, an endpoint's `/v1/models`). May
   * do I/O; must not throw for a provider that is unreachable: it resolves what it knows. Absent: `catalog`.
   */
  loadCatalog?(provider: string, signal?: AbortSignal): Promise<ProviderCatalog | undefined>
  /**
   * Whether `provider` can be used now: its key is found, its endpoint configured. Absent: assumed
   * usable. Never returns the key.
   */
  configured?(provider: string): Promise<boolean>
  /**
   * Where a call of `provider`/`model` goes and which key it needs, for `dsh doctor`: the endpoint URL
   * (absent: the library's own default), the credential names tried, where the key was found (never
   * its value), and whether a call fails without one.
   */
  access?(provider: string, model: string): Promise<ProviderAccess>
  /** Defaults `prepareCall` fills in for fields the caller left out (at least `model`). */
  defaults?(provider: string): Partial<Omit<LlmCallConfig, 'provider'>>
  /**
   * The explicit reasoning efforts this provider accepts for `model`, or undefined when any is fine.
   * `prepareCall` refuses an explicit effort outside this list before any I/O; no aliasing, no downgrade.
   */
  reasoningEfforts?(provider: string, model: string): readonly ReasoningEffort[] | undefined
  stream(dispatch: LlmDispatch): AsyncIterable<StreamChunk>
}

/** Builds frozen LlmErrorData, dropping undefined facts. */
export function llmError(
  code: LlmErrorCode,
  message: string,
  facts: Omit<LlmErrorData, 'code' | 'message'> = {},
): LlmErrorData {
  const data: LlmErrorData = { code, message }
  for (const [key, value] of Object.entries(facts)) {
    if (value !== undefined) (data as unknown as Record<string, unknown>)[key] = value
  }
  return Object.freeze(data)
}

/** The terminal chunk for a failure. `ABORTED` errors finish with reason `aborted`, all others `error`. */
export function errorFinish(error: LlmErrorData): StreamChunk {
  return Object.freeze({ type: 'finish', reason: error.code === 'ABORTED' ? 'aborted' : 'error', error })
}

/**
 * An LlmErrorData as a throwable HarnessError, for consumers that turn a failed stream into an
 * exception (the stream itself never throws it). `code` is the LlmError code; `facts` the data.
 */
export class LlmError extends HarnessError {
  readonly data: LlmErrorData

  constructor(data: LlmErrorData) {
    super(data.code, data.message, { ...data })
    this.data = Object.freeze({ ...data })
  }
}
