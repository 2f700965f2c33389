// @dsh/llm: the model seam `ctx.llm`. Owns the adapter registry (provider name -> adapter), call
// preparation (resolve once, freeze, dispatch once) and `stream()` through the `llm/stream` waterfall,
// which turns every adapter-side failure into a terminal chunk. Providers live in subpath modules.
import { type Context, deepFreeze, directService, HarnessError, Service } from '@dsh/kernel'
import {
  errorFinish,
  type LlmAdapter,
  type LlmDispatch,
  type LlmRequest,
  llmError,
  type ModelInfo,
  type ProviderAccess,
  type ProviderCatalog,
} from './adapter.js'
import type { ModelPrices } from './cost.js'
import type { LlmCallConfig, LlmErrorData, ReasoningEffort, StreamChunk } from './messages.js'
import { defineModelSetting, definePricesSetting, parseModel } from './model-setting.js'

declare module 'cordis' {
  interface Context {
    llm: LlmService
  }
  interface Events {
    /**
     * Every model call passes through this waterfall. A listener returns `next()` (possibly wrapped or
     * filtered) or its own chunk stream to short-circuit the adapter. Listener errors are thrown to the
     * caller of `ctx.llm.stream()`: middleware bugs are not provider failures.
     */
    'llm/stream'(dispatch: LlmDispatch, next: () => AsyncIterable<StreamChunk>): AsyncIterable<StreamChunk>
  }
}

export interface LlmServiceConfig {
  /** The provider used when a call names none. Default `deepseek`. */
  provider?: string
  /** The model used when a call names neither provider nor model (else the adapter's default). */
  model?: string
}

/** One provider's models as `ctx.llm.catalogs()` reports them. */
export interface ProviderModels {
  provider: string
  /** Whether it can be used now (its key is found, its endpoint configured). */
  configured: boolean
  defaultModel?: string
  models: ModelInfo[]
}

/** A call resolved by `prepareCall`: deep-frozen, dispatchable once. */
export interface PreparedCall {
  readonly config: Readonly<LlmCallConfig>
}

/** The handle `registerAdapter` returns. Disposing it (or the registering plugin) removes every route. */
export interface AdapterRegistration {
  readonly providers: readonly string[]
  readonly disposed: boolean
  /** Swaps the adapter of every route at once. Throws `REGISTRATION_DISPOSED` after dispose. */
  replace(adapter: LlmAdapter): void
  /** Removes the routes. Idempotent. */
  dispose(): void
}

interface RegistrationState {
  adapter: LlmAdapter
  readonly providers: readonly string[]
  disposed: boolean
}

interface PreparedState {
  registration: RegistrationState | undefined
  adapter: LlmAdapter | undefined
  dispatched: boolean
}

const EFFORTS: readonly ReasoningEffort[] = ['none', 'minimal', 'low', 'medium', 'high', 'max']

function validateAdapter(adapter: LlmAdapter): void {
  if (typeof adapter !== 'object' || adapter === null || typeof adapter.stream !== 'function') {
    throw new HarnessError('INVALID_ADAPTER', 'an LLM adapter must be an object with a stream(dispatch) method', {
      name: (adapter as { name?: unknown } | null)?.name,
    })
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function failureOf(error: unknown, adapter: string, signal: AbortSignal | undefined): LlmErrorData {
  if (signal?.aborted) return llmError('ABORTED', 'the request was aborted')
  return llmError('UNKNOWN', `adapter "${adapter}" failed: ${messageOf(error)}`)
}

function isChunk(value: unknown): value is StreamChunk {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
}

/**
 * `ctx.llm`. Errors it throws (consumer and configuration bugs): `DUPLICATE_ADAPTER`, `INVALID_ADAPTER`,
 * `REGISTRATION_DISPOSED`, `INVALID_CALL_CONFIG`, `UNSUPPORTED_REASONING_EFFORT`, `INVALID_PREPARED_CALL`.
 * Everything that goes wrong once a stream runs (no adapter, adapter crash, HTTP, abort) is a terminal
 * `finish` chunk instead.
 */
export class LlmService extends Service {
  static readonly provide = 'llm'
  private readonly _routes = new Map<string, RegistrationState>()
  private readonly _prepared = new WeakMap<PreparedCall, PreparedState>()
  private readonly _config: LlmServiceConfig
  // Read on every request: without Cordis's per-call proxies (decision 351).
  private readonly _settings: () => Context['settings'] | undefined

  constructor(ctx: Context, config: LlmServiceConfig = {}) {
    super(ctx, 'llm')
    this._config = config ?? {}
    this._settings = directService(ctx, 'settings')
    // The `model` setting, when ctx.settings is loaded: it outranks this row's `provider`/`model`.
    ctx.inject(['settings'], (inner) => {
      defineModelSetting(inner, () => this.providers())
      definePricesSetting(inner)
    })
  }

  /**
   * What `provider`/`model` costs: the `prices` setting's entry, else the model's catalog prices;
   * undefined when neither knows (the cost is then unknown, never 0).
   */
  prices(provider: string, model: string): ModelPrices | undefined {
    const settings = this._settings()
    const set = settings?.has('prices') ? settings.get('prices')?.[`${provider}:${model}`] : undefined
    if (set) return { ...set }
    const info = this.catalog(provider)[0]?.models.find((entry) => entry.id === model)
    return info?.cost
  }

  /** The `model` setting split into provider and model, when ctx.settings declares it. */
  private _setting(): { provider?: string; model?: string } {
    const settings = this._settings()
    const text = settings?.has('model') ? settings.get('model') : undefined
    return text ? parseModel(text) : {}
  }

  /** The provider used when a call names none: the `model` setting's, else this row's, else `deepseek`. */
  get defaultProvider(): string {
    return this._setting().provider ?? this._config.provider ?? 'deepseek'
  }

  /** Registered provider names, sorted. */
  providers(): string[] {
    return [...this._routes.keys()].sort()
  }

  /**
   * Routes each of `providers` to `adapter` for the lifetime of the calling plugin. The whole batch is
   * validated first (non-empty names, no repeats, none already routed: `DUPLICATE_ADAPTER`), then
   * registered all together, or nothing is.
   */
  registerAdapter(providers: string | readonly string[], adapter: LlmAdapter): AdapterRegistration {
    const names = typeof providers === 'string' ? [providers] : [...providers]
    validateAdapter(adapter)
    if (
      names.length === 0 ||
      names.some((name) => typeof name !== 'string' || name.trim() === '' || name.trim() !== name)
    ) {
      throw new HarnessError('INVALID_ADAPTER', 'provider names must be non-empty strings without surrounding spaces', {
        providers: names,
      })
    }
    const state: RegistrationState = { adapter, providers: Object.freeze(names), disposed: false }
    const routes = this._routes
    const disposeEffect = this.ctx.effect(
      () => {
        const seen = new Set<string>()
        for (const name of names) {
          const existing = routes.get(name)
          if (existing || seen.has(name)) {
            throw new HarnessError(
              'DUPLICATE_ADAPTER',
              `provider "${name}" already has an adapter${existing ? ` ("${existing.adapter.name}")` : ' in this batch'}; disable one of the rows`,
              { provider: name, existing: existing?.adapter.name ?? adapter.name, adding: adapter.name },
            )
          }
          seen.add(name)
        }
        for (const name of names) routes.set(name, state)
        return () => {
          state.disposed = true
          for (const name of names) if (routes.get(name) === state) routes.delete(name)
        }
      },
      `llm.registerAdapter(${names.join(',')})`,
    )
    return {
      providers: state.providers,
      get disposed() {
        return state.disposed
      },
      replace(next: LlmAdapter) {
        if (state.disposed) {
          throw new HarnessError('REGISTRATION_DISPOSED', 'this adapter registration was disposed; register again', {
            providers: names,
          })
        }
        validateAdapter(next)
        state.adapter = next
      },
      dispose() {
        if (state.disposed) return
        state.disposed = true
        void disposeEffect()
      },
    }
  }

  /** The advisory catalogs of registered providers (all, or the one named). Never used to refuse a call. */
  catalog(provider?: string): ProviderCatalog[] {
    const names = provider === undefined ? this.providers() : [provider]
    const out: ProviderCatalog[] = []
    for (const name of names) {
      const catalog = this._routes.get(name)?.adapter.catalog?.(name)
      if (catalog) out.push(catalog)
    }
    return out
  }

  /**
   * The catalogs of registered providers (all, or the one named) after each adapter loaded what it can
   * (`loadCatalog`), each with whether the provider is usable now. Advisory, like `catalog`.
   */
  async catalogs(options: { provider?: string; signal?: AbortSignal } = {}): Promise<ProviderModels[]> {
    const names = options.provider === undefined ? this.providers() : [options.provider]
    return Promise.all(
      names.map(async (provider): Promise<ProviderModels> => {
        const adapter = this._routes.get(provider)?.adapter
        const [catalog, configured] = await Promise.all([
          adapter?.loadCatalog ? adapter.loadCatalog(provider, options.signal) : adapter?.catalog?.(provider),
          adapter?.configured ? adapter.configured(provider) : true,
        ])
        return { provider, configured, defaultModel: catalog?.defaultModel, models: catalog?.models ?? [] }
      }),
    )
  }

  /**
   * Where a call of `provider`/`model` goes and which key it needs (`LlmAdapter.access`), for
   * diagnostics; undefined when no adapter serves the provider or the adapter cannot say.
   */
  async access(provider: string, model: string): Promise<ProviderAccess | undefined> {
    return this._routes.get(provider)?.adapter.access?.(provider, model)
  }

  /**
   * Lets the adapter of `provider` (default: the default provider) load what it loads on first use, so
   * that `resolveCall`/`prepareCall` see its default model and `catalog` its models. Never throws: a
   * catalog that cannot load only leaves the catalog advisory as before.
   */
  async ready(provider: string = this.defaultProvider): Promise<void> {
    try {
      await this._routes.get(provider)?.adapter.loadCatalog?.(provider)
    } catch {}
  }

  /**
   * What a call with `config` would use: provider, model and the adapter's defaults filled in, without
   * preparing it (surfaces show this as "the model"). Throws like `prepareCall`.
   */
  resolveCall(config: Partial<LlmCallConfig> = {}): LlmCallConfig {
    checkCallConfig(config)
    const setting = this._setting()
    const settingProvider = setting.provider ?? this._config.provider ?? 'deepseek'
    const provider = config.provider ?? settingProvider
    const registration = this._routes.get(provider)
    const adapter = registration?.adapter
    const defaults = adapter?.defaults?.(provider) ?? {}
    // The default model applies to calls of its own provider (named or not), never to another provider.
    const defaultModel =
      setting.model !== undefined && provider === settingProvider
        ? setting.model
        : config.provider === undefined
          ? this._config.model
          : undefined
    const model = config.model ?? defaultModel ?? defaults.model ?? ''
    const resolved: LlmCallConfig = { provider, model }
    for (const key of ['reasoningEffort', 'temperature', 'maxTokens', 'stop'] as const) {
      const value = config[key] ?? defaults[key]
      if (value !== undefined) (resolved as unknown as Record<string, unknown>)[key] = value
    }
    if (config.reasoningEffort !== undefined && adapter?.reasoningEfforts) {
      const supported = adapter.reasoningEfforts(provider, model)
      if (supported && !supported.includes(config.reasoningEffort)) {
        throw new HarnessError(
          'UNSUPPORTED_REASONING_EFFORT',
          `provider "${provider}" model "${model}" does not accept reasoning effort "${config.reasoningEffort}"; use one of: ${supported.join(', ')}`,
          { provider, model, effort: config.reasoningEffort, supported: [...supported] },
        )
      }
    }
    return resolved
  }

  /**
   * Resolves provider, model and the adapter's defaults once and deep-freezes the result. Throws
   * `INVALID_CALL_CONFIG` for malformed fields and `UNSUPPORTED_REASONING_EFFORT` when an explicit
   * effort is not one the adapter accepts for that model, before any I/O. A provider without an adapter
   * is not an error here: dispatching it yields a `NO_ADAPTER` terminal chunk.
   */
  prepareCall(config: Partial<LlmCallConfig> = {}): PreparedCall {
    const resolved = this.resolveCall(config)
    // The adapter is bound now: a later `replace` or re-registration does not change a prepared call.
    const registration = this._routes.get(resolved.provider)
    const prepared: PreparedCall = deepFreeze({ config: resolved })
    this._prepared.set(prepared, { registration, adapter: registration?.adapter, dispatched: false })
    return prepared
  }

  /**
   * Streams one model call through the `llm/stream` waterfall. `call` is a PreparedCall (dispatchable
   * once: `INVALID_PREPARED_CALL` on reuse or on an object this service did not prepare) or a config
   * to prepare now. The stream always ends with exactly one `finish` chunk.
   */
  stream(call: PreparedCall | Partial<LlmCallConfig>, request: LlmRequest): AsyncIterable<StreamChunk> {
    const prepared = 'config' in call ? call : this.prepareCall(call)
    const state = this._prepared.get(prepared)
    if (!state || state.dispatched) {
      throw new HarnessError(
        'INVALID_PREPARED_CALL',
        state
          ? 'this prepared call was already dispatched; call prepareCall() again for a new request'
          : 'this object was not made by ctx.llm.prepareCall() of this service',
        { provider: prepared.config?.provider ?? null, dispatched: state?.dispatched ?? false },
      )
    }
    state.dispatched = true
    const dispatch: LlmDispatch = Object.freeze({ call: prepared.config, request })
    return this.ctx.waterfall('llm/stream', dispatch, () => run(state, dispatch, this.providers()))
  }
}

function checkCallConfig(config: Partial<LlmCallConfig>): void {
  const problems: string[] = []
  const { provider, model, reasoningEffort, temperature, maxTokens, stop } = config
  if (provider !== undefined && (typeof provider !== 'string' || provider === '')) problems.push('provider')
  if (model !== undefined && typeof model !== 'string') problems.push('model')
  if (reasoningEffort !== undefined && !EFFORTS.includes(reasoningEffort)) problems.push('reasoningEffort')
  if (temperature !== undefined && (typeof temperature !== 'number' || !Number.isFinite(temperature))) {
    problems.push('temperature')
  }
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || maxTokens <= 0)) problems.push('maxTokens')
  if (stop !== undefined && (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string'))) problems.push('stop')
  if (problems.length > 0) {
    throw new HarnessError('INVALID_CALL_CONFIG', `invalid LLM call config fields: ${problems.join(', ')}`, {
      fields: problems,
    })
  }
}

/** The innermost step of the waterfall: select the adapter, dispatch, and guard its iteration. */
async function* run(state: PreparedState, dispatch: LlmDispatch, known: string[]): AsyncGenerator<StreamChunk> {
  const { call, request } = dispatch
  const adapter = state.adapter
  if (!adapter || !state.registration) {
    yield errorFinish(
      llmError(
        'NO_ADAPTER',
        `no adapter is registered for provider "${call.provider}" (registered: ${known.join(', ') || 'none'}); enable a row that provides it`,
      ),
    )
    return
  }
  if (state.registration.disposed || state.registration.adapter !== adapter) {
    yield errorFinish(
      llmError(
        'NO_ADAPTER',
        `the adapter for provider "${call.provider}" was replaced or removed after prepareCall; prepare the call again`,
      ),
    )
    return
  }
  if (request.signal?.aborted) {
    yield errorFinish(llmError('ABORTED', 'the request was aborted before dispatch'))
    return
  }
  let iterator: AsyncIterator<StreamChunk>
  try {
    iterator = adapter.stream(dispatch)[Symbol.asyncIterator]()
  } catch (error) {
    yield errorFinish(failureOf(error, adapter.name, request.signal))
    return
  }
  try {
    while (true) {
      let step: IteratorResult<StreamChunk>
      try {
        step = await iterator.next()
      } catch (error) {
        yield errorFinish(failureOf(error, adapter.name, request.signal))
        return
      }
      if (step.done) break
      if (!isChunk(step.value)) {
        yield errorFinish(
          llmError('MALFORMED_RESPONSE', `adapter "${adapter.name}" yielded a value that is not a chunk`),
        )
        return
      }
      yield step.value
      if (step.value.type === 'finish') return
    }
    yield errorFinish(
      request.signal?.aborted
        ? llmError('ABORTED', 'the request was aborted')
        : llmError('MALFORMED_RESPONSE', `adapter "${adapter.name}" ended its stream without a finish chunk`),
    )
  } finally {
    try {
      await iterator.return?.()
    } catch {}
  }
}

export default LlmService

export type {
  LlmAdapter,
  LlmDispatch,
  LlmRequest,
  ModelInfo,
  ProviderAccess,
  ProviderCatalog,
  ToolChoice,
} from './adapter.js'
export { errorFinish, LlmError, llmError } from './adapter.js'
export { assembleMessage, MessageAssembler, messageToChunks, parseToolArguments } from './assembler.js'
export { formatUsd, type ModelPrices, type RequestCost, requestCost } from './cost.js'
export { acceptsImages, imageMissing, imagePlaceholder } from './images.js'
export type {
  AssistantContent,
  AssistantMessage,
  FinishReason,
  ImageBlock,
  LlmCallConfig,
  LlmErrorCode,
  LlmErrorData,
  Message,
  ReasoningBlock,
  ReasoningEffort,
  StreamChunk,
  TextBlock,
  ToolCallBlock,
  ToolResultContent,
  ToolResultMessage,
  ToolSchema,
  Usage,
  UserContent,
  UserMessage,
} from './messages.js'
export { parseModel } from './model-setting.js'
