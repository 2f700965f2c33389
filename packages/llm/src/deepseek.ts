// The `deepseek` provider plugin: registers the Chat Completions adapter in the DeepSeek dialect
// (thinking switch, reasoning_content round trip, cache usage fields). With no config at all it
// reads DEEPSEEK_API_KEY / DEEPSEEK_BASE_URL, the key at request time ($DSH_MODEL is the `model` setting).

import type { Context } from '@dsh/kernel'
import type { CredentialsService } from '@dsh/settings/credentials'
import type { ModelInfo } from './adapter.js'
import { type ChatCompletionsOptions, createChatCompletionsAdapter, type Dialect } from './chat-completions.js'
import type { ReasoningEffort } from './messages.js'
import { BUILT_IN_LIMITS, createModelTransport } from './transport.js'

export interface ChatProviderConfig {
  /** Provider names this row serves. Default `["deepseek"]` (`["openai-compatible"]` for that module). */
  providers?: string[]
  /** Base URL (`/chat/completions` is appended). Default: the base URL variable, then the public endpoint. */
  baseUrl?: string
  /** Default model when a call names none (the `model` setting outranks it). Default: the module's default. */
  model?: string
  /** The credential reference holding the API key. */
  apiKey?: string
  /** DeepSeek dialect only: send `thinking: enabled` (default true); reasoningEffort `none` turns it off. */
  thinking?: boolean
  /** Replaces the advisory model catalog. */
  models?: ModelInfo[]
  /** Extra HTTP headers on every request (never put secrets here; use `apiKey`). */
  headers?: Record<string, string>
  /**
   * Bound on opening the TCP/TLS connection. Default 10000 (10 s, Node's own); another value, or a
   * first-byte bound over 5 min or an idle bound of 5 min or more, loads the `undici` package for this row.
   */
  connectTimeoutMs?: number
  /**
   * Bound from sending the request to the first data event; response headers and keep-alive comments
   * do not end it (a queued reasoning model may send only keep-alives). Default 300000 (5 min).
   */
  firstByteTimeoutMs?: number
  /** @deprecated the older name of `firstByteTimeoutMs`, still read when that is unset. */
  firstTokenTimeoutMs?: number
  /** Bound on the silence between data events once streaming. Default 120000 (2 min). */
  idleTimeoutMs?: number
  /**
   * Bound on one whole response, request to last event, however steadily it streams. Default 600000
   * (10 min); raise it for very long answers.
   */
  responseTimeoutMs?: number
}

/** Defaults of the model request bounds, milliseconds. */
export const MODEL_TIMEOUTS = Object.freeze({
  connect: BUILT_IN_LIMITS.connect,
  firstByte: 300_000,
  idle: 120_000,
  response: 600_000,
})

const V4_EFFORTS: ReasoningEffort[] = ['none', 'low', 'high', 'max']

/** The DeepSeek catalog as of 2026-11 (advisory; names change, so rows can replace it). */
export const DEEPSEEK_MODELS: readonly ModelInfo[] = Object.freeze([
  {
    id: 'deepseek-v4-pro',
    label: 'DeepSeek-V4-Pro',
    contextWindow: 1_000_000,
    maxOutputTokens: 384_000,
    reasoningEfforts: V4_EFFORTS,
    input: ['text'],
  },
  {
    id: 'deepseek-flash',
    label: 'DeepSeek-V4.1-Flash',
    contextWindow: 1_000_000,
    maxOutputTokens: 384_000,
    reasoningEfforts: V4_EFFORTS,
    input: ['text', 'image'],
  },
  {
    id: 'deepseek-v4-flash',
    label: 'DeepSeek-V4.1-Flash (old name)',
    contextWindow: 1_000_000,
    maxOutputTokens: 384_000,
    reasoningEfforts: V4_EFFORTS,
    input: ['text', 'image'],
  },
])

export const DEEPSEEK_DEFAULT_MODEL = 'deepseek-v4-pro'
export const DEEPSEEK_BASE_URL = 'https://api.deepseek.com'

export interface DialectDefaults {
  name: string
  dialect: Dialect
  providers: string[]
  baseUrlVariable: string
  baseUrl?: string
  apiKey: string
  keyRequired: boolean
  model?: string
  models: readonly ModelInfo[]
  /** Per-model destinations and loaded catalogs (the named endpoints of `openai-compatible`). */
  extra?: Pick<ChatCompletionsOptions, 'route' | 'loadModels' | 'knownModels' | 'configured'>
}

/** Registers one Chat Completions adapter for the row's providers, for the row's lifetime. */
export function applyChatProvider(ctx: Context, config: ChatProviderConfig, defaults: DialectDefaults): void {
  const credentials: CredentialsService = ctx.credentials
  const keyName = config.apiKey ?? defaults.apiKey
  const providers = config.providers ?? defaults.providers
  const firstByteTimeoutMs = config.firstByteTimeoutMs ?? config.firstTokenTimeoutMs ?? MODEL_TIMEOUTS.firstByte
  const idleTimeoutMs = config.idleTimeoutMs ?? MODEL_TIMEOUTS.idle
  const options: ChatCompletionsOptions = {
    name: defaults.name,
    providers,
    dialect: defaults.dialect,
    keyName,
    keyRequired: defaults.keyRequired,
    ...(config.baseUrl ? {} : { baseUrlVariable: defaults.baseUrlVariable }),
    async baseUrl() {
      const url = config.baseUrl ?? (await credentials.get(defaults.baseUrlVariable)) ?? defaults.baseUrl
      return url ?? ''
    },
    async apiKey() {
      const found = await credentials.resolve(keyName)
      return found && { value: found.value, location: found.location }
    },
    defaultModel: () => config.model ?? defaults.model ?? '',
    models: config.models ?? defaults.models,
    thinking: config.thinking ?? true,
    headers: config.headers,
    firstByteTimeoutMs,
    idleTimeoutMs,
    responseTimeoutMs: config.responseTimeoutMs ?? MODEL_TIMEOUTS.response,
    ...defaults.extra,
    transport: createModelTransport({
      connectTimeoutMs: config.connectTimeoutMs ?? MODEL_TIMEOUTS.connect,
      firstByteTimeoutMs,
      idleTimeoutMs,
    }),
  }
  ctx.effect(() => () => void options.transport.close())
  ctx.llm.registerAdapter(providers, createChatCompletionsAdapter(options))
}

/** The `deepseek` provider row: `use: "@dsh/llm/deepseek"`. */
export default {
  name: 'llm-deepseek',
  inject: ['llm', 'credentials'],
  apply(ctx: Context, config: ChatProviderConfig = {}) {
    applyChatProvider(ctx, config ?? {}, {
      name: 'deepseek',
      dialect: 'deepseek',
      providers: ['deepseek'],
      baseUrlVariable: 'DEEPSEEK_BASE_URL',
      baseUrl: DEEPSEEK_BASE_URL,
      apiKey: 'DEEPSEEK_API_KEY',
      keyRequired: true,
      model: DEEPSEEK_DEFAULT_MODEL,
      models: DEEPSEEK_MODELS,
    })
  },
}
