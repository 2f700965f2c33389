// The one Chat Completions implementation behind `deepseek` and `openai-compatible`: builds the
// request body from dsh messages, POSTs it with fetch, reads the SSE stream and normalizes it into
// stream chunks (chat-stream.ts). Every failure (HTTP status, transport, malformed frame, timeout, abort) ends the
// stream with a terminal chunk; nothing here throws to the consumer and nothing retries.
import type { LlmAdapter, LlmDispatch, ModelInfo, ProviderAccess, ProviderCatalog, ToolChoice } from './adapter.js'
import { errorFinish, llmError } from './adapter.js'
import { ChunkReader, FINISH, isObject, type Json, providerError } from './chat-stream.js'
import type { FinishReason, LlmErrorCode, LlmErrorData, ReasoningEffort, StreamChunk } from './messages.js'
import { readSse } from './sse.js'
import { type BodyPrefix, looksLikeSse, readPrefix } from './stream-body.js'
import { type ModelTransport, timeoutOfCause } from './transport.js'
import { bodyText } from './wire-json.js'
import { wireMessages, wireText } from './wire-messages.js'

export type Dialect = 'deepseek' | 'openai'

export interface ChatCompletionsOptions {
  /** Adapter name for diagnostics. */
  name: string
  /** The provider names this adapter serves (replay state of its own messages is sent back). */
  providers: readonly string[]
  dialect: Dialect
  /** Resolved per request. A trailing slash is ignored; `/chat/completions` is appended. */
  baseUrl: () => Promise<string>
  /** Resolved per request; `undefined` when no source has the key. Never logged. */
  apiKey: () => Promise<{ value: string; location: string } | undefined>
  /** The credential reference, for messages (e.g. `DEEPSEEK_API_KEY`). */
  keyName: string
  keyRequired: boolean
  defaultModel: () => string
  models: readonly ModelInfo[]
  /** DeepSeek dialect: send `thinking: enabled` unless the effort is `none`. */
  thinking: boolean
  headers?: Readonly<Record<string, string>>
  /** Bound on the time until the first data event; keep-alive comments do not reset it. */
  firstByteTimeoutMs: number
  /** Bound on the silence between data events once the stream has started. */
  idleTimeoutMs: number
  /**
   * Bound on one whole response, from sending the request to the end of the stream: a server that
   * keeps trickling data never trips the idle bound, and must not hold a turn (and the host) forever.
   */
  responseTimeoutMs: number
  /**
   * The HTTP client: its connect timeout is the third bound; its own limits must not fire before the
   * two above (see `createModelTransport`).
   */
  transport: ModelTransport
  /**
   * Where one model goes, when that depends on the model (named endpoints): its base URL, wire model
   * id and key. Absent: `baseUrl`, `apiKey`, `keyName`, `keyRequired` and the call's model.
   */
  route?: (model: string) => Promise<ChatRoute | { error: LlmErrorData }>
  /** The advisory catalog loaded on first use (endpoint model lists); `models` when absent. */
  loadModels?: (signal?: AbortSignal) => Promise<readonly ModelInfo[]>
  /** What `loadModels` loaded so far, for the synchronous catalog; `models` when absent. */
  knownModels?: () => readonly ModelInfo[]
  /** The credential variable that overrides the base URL (`DEEPSEEK_BASE_URL`), for diagnostics. */
  baseUrlVariable?: string
  /** Whether the provider can be used now. Default: a key is found, or none is required. */
  configured?: () => Promise<boolean>
}

/** One request's destination (see `ChatCompletionsOptions.route`). */
export interface ChatRoute {
  baseUrl: string
  /** The model id sent on the wire. */
  model: string
  keyName: string
  keyRequired: boolean
  apiKey: () => Promise<{ value: string; location: string } | undefined>
}

/** The explicit efforts the DeepSeek API accepts; `none` turns thinking off. No silent aliasing. */
export const DEEPSEEK_EFFORTS: readonly ReasoningEffort[] = Object.freeze(['none', 'low', 'high', 'max'])

const ERROR_BODY_LIMIT = 64 * 1024

function wireToolChoice(choice: ToolChoice): unknown {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } }
}

/** The request body, or an error when the request cannot be expressed (checked before any I/O). */
export async function buildBody(
  dispatch: LlmDispatch,
  options: ChatCompletionsOptions,
): Promise<{ body: Json } | { error: LlmErrorData }> {
  const { call, request } = dispatch
  const body: Json = { model: call.model, messages: await wireMessages(request, options, call.model), stream: true }
  body.stream_options = { include_usage: true }
  const effort = call.reasoningEffort
  if (options.dialect === 'deepseek') {
    const thinking = options.thinking && effort !== 'none'
    body.thinking = { type: thinking ? 'enabled' : 'disabled' }
    if (thinking && effort !== undefined) body.reasoning_effort = effort
    const forced = request.toolChoice !== undefined && request.toolChoice !== 'auto' && request.toolChoice !== 'none'
    if (thinking && forced) {
      return {
        error: llmError(
          'BAD_REQUEST',
          'DeepSeek thinking mode rejects a forced tool_choice; use reasoningEffort "none" to force a tool call',
        ),
      }
    }
  } else if (effort !== undefined) {
    body.reasoning_effort = effort
  }
  if (call.maxTokens !== undefined) body.max_tokens = call.maxTokens
  if (call.temperature !== undefined) body.temperature = call.temperature
  if (call.stop !== undefined && call.stop.length > 0) body.stop = [...call.stop]
  const tools = request.tools
  if (tools && tools.length > 0) {
    body.tools = wireText.of(options, tools, () =>
      tools.map((tool) => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      })),
    )
  }
  if (request.toolChoice !== undefined) body.tool_choice = wireToolChoice(request.toolChoice)
  return { body }
}

/** Parses `Retry-After` (seconds or an HTTP date) and `retry-after-ms` into milliseconds. */
function retryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms'))
  if (headers.has('retry-after-ms') && Number.isFinite(ms)) return ms
  const value = headers.get('retry-after')
  if (value === null) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

function requestIdOf(headers: Headers): string | undefined {
  return headers.get('x-request-id') ?? headers.get('request-id') ?? undefined
}

const CONTEXT_WORDS = /context length|context window|maximum context|too many tokens|prompt is too long/i

function statusCode(status: number, providerMessage: string): LlmErrorCode {
  if (status === 401 || status === 403) return 'AUTH'
  if (status === 402) return 'INSUFFICIENT_BALANCE'
  if (status === 429) return 'RATE_LIMIT'
  if (status === 413 || ((status === 400 || status === 422) && CONTEXT_WORDS.test(providerMessage))) {
    return 'CONTEXT_OVERFLOW'
  }
  if (status === 400 || status === 404 || status === 422) return 'BAD_REQUEST'
  if (status >= 500) return 'PROVIDER_UNAVAILABLE'
  return 'UNKNOWN'
}

const HINTS: Partial<Record<LlmErrorCode, string>> = {
  INSUFFICIENT_BALANCE: 'top up the account balance',
  RATE_LIMIT: 'rate or concurrency limit reached; retry later',
  PROVIDER_UNAVAILABLE: 'the provider is failing or overloaded; retry after a short wait',
  CONTEXT_OVERFLOW: 'the request does not fit the model context; compact the conversation',
}

async function readLimited(response: Response): Promise<string> {
  if (!response.body) return ''
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  try {
    while (text.length < ERROR_BODY_LIMIT) {
      const { value, done } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
    }
  } finally {
    reader.cancel().catch(() => {})
  }
  return text.slice(0, ERROR_BODY_LIMIT)
}

function redact(text: string, secret: string | undefined): string {
  return secret ? text.split(secret).join('[redacted]') : text
}

/** Creates the adapter. See the package README for the mapping of statuses and finish reasons. */
export function createChatCompletionsAdapter(options: ChatCompletionsOptions): LlmAdapter {
  const efforts = options.dialect === 'deepseek' ? DEEPSEEK_EFFORTS : undefined
  return {
    name: options.name,
    catalog(provider): ProviderCatalog {
      const models = options.knownModels?.() ?? options.models
      return { provider, defaultModel: options.defaultModel(), models: models.map((model) => ({ ...model })) }
    },
    async loadCatalog(provider, signal) {
      const models = options.loadModels ? await options.loadModels(signal) : options.models
      return { provider, defaultModel: options.defaultModel(), models: models.map((model) => ({ ...model })) }
    },
    async configured() {
      if (options.configured) return options.configured()
      return !options.keyRequired || (await options.apiKey()) !== undefined
    },
    async access(_provider, model): Promise<ProviderAccess> {
      const routed = options.route ? await options.route(model) : undefined
      if (routed && 'error' in routed) return { keyNames: [], keyRequired: false, error: routed.error.message }
      const keyName = routed?.keyName ?? options.keyName
      const keyRequired = routed?.keyRequired ?? options.keyRequired
      const found = await (routed?.apiKey ?? options.apiKey)()
      return {
        url: routed?.baseUrl ?? (await options.baseUrl()),
        ...(options.baseUrlVariable ? { urlVariable: options.baseUrlVariable } : {}),
        keyNames: keyName.startsWith('(') ? [] : [keyName],
        keyRequired,
        ...(found ? { key: { name: keyName, location: found.location } } : {}),
      }
    },
    defaults: () => ({ model: options.defaultModel() }),
    reasoningEfforts: () => efforts,
    stream: (dispatch) => streamCompletion(dispatch, options),
  }
}

type TimeoutOption = 'connectTimeoutMs' | 'firstByteTimeoutMs' | 'idleTimeoutMs' | 'responseTimeoutMs'

/** A timeout is a retryable fault naming the bound that expired (its row option) and the endpoint. */
function timeoutError(option: TimeoutOption, message: string, url: string): LlmErrorData {
  return llmError(
    'TIMEOUT',
    `${message} (${option}, endpoint ${url}); raise ${option} in the provider row if the model needs longer`,
  )
}

/**
 * The body as an SSE stream, or an error when the server answered 200 with something else (an HTML
 * login page, a JSON object): that is a misconfigured endpoint, not a stream cut, so it is reported
 * with the content type and first bytes and is not retried. A body is accepted as SSE when its
 * content type says so, or when its first bytes look like SSE fields (servers that omit the type).
 */
async function streamBody(
  response: Response,
  label: string,
  requestId: string | undefined,
): Promise<{ stream: ReadableStream<Uint8Array> } | { error: LlmErrorData }> {
  const type = response.headers.get('content-type') ?? ''
  const body = response.body as ReadableStream<Uint8Array>
  if (/event-stream/i.test(type)) return { stream: body }
  const prefix: BodyPrefix = await readPrefix(body)
  if (looksLikeSse(prefix.text)) return { stream: prefix.stream }
  await prefix.stream.cancel().catch(() => {})
  const shown = JSON.stringify(prefix.text.slice(0, 200))
  return {
    error: llmError(
      'MALFORMED_RESPONSE',
      `${label} answered with a body that is not an event stream (content type ${type || 'missing'}; first bytes ${shown}): check the base URL points at the API, not a web page or proxy`,
      { requestId },
    ),
  }
}

async function* streamCompletion(dispatch: LlmDispatch, options: ChatCompletionsOptions): AsyncGenerator<StreamChunk> {
  const { call, request } = dispatch
  const label = options.dialect === 'deepseek' ? 'DeepSeek' : `${call.provider} (OpenAI-compatible)`
  const signal = request.signal
  if (signal?.aborted) return yield errorFinish(llmError('ABORTED', 'the request was aborted before it was sent'))

  const routed = options.route ? await options.route(call.model) : undefined
  if (routed && 'error' in routed) return yield errorFinish(routed.error)
  const route: ChatRoute = routed ?? {
    baseUrl: await options.baseUrl(),
    model: call.model,
    keyName: options.keyName,
    keyRequired: options.keyRequired,
    apiKey: options.apiKey,
  }
  let key: { value: string; location: string } | undefined
  try {
    key = await route.apiKey()
  } catch (error) {
    return yield errorFinish(llmError('AUTH', `cannot resolve ${route.keyName}: ${(error as Error).message}`))
  }
  if (!key && route.keyRequired) {
    return yield errorFinish(
      llmError(
        'AUTH',
        `no API key for ${label}: set ${route.keyName} in the environment, with dsh config set ${route.keyName} KEY, or in a .env file`,
      ),
    )
  }
  if (key && !/^[\x21-\x7e]+$/.test(key.value)) {
    return yield errorFinish(
      llmError('AUTH', `the ${route.keyName} value from ${key.location} contains spaces or non-ASCII characters`),
    )
  }
  const built = await buildBody(dispatch, options)
  if ('error' in built) return yield errorFinish(built.error)
  const body = built.body
  body.model = route.model
  const url = `${route.baseUrl.replace(/\/+$/, '')}/chat/completions`
  const secret = key?.value

  const controller = new AbortController()
  let timedOut: LlmErrorData | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  const arm = (ms: number, option: TimeoutOption, what: string) => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      timedOut = timeoutError(option, `${label} sent no ${what} within ${ms} ms`, url)
      controller.abort()
    }, ms)
  }
  const onAbort = () => controller.abort()
  signal?.addEventListener('abort', onAbort, { once: true })
  // The whole response's bound runs beside the first-byte/idle timer, which each event re-arms.
  const overall = setTimeout(() => {
    timedOut = timeoutError(
      'responseTimeoutMs',
      `${label} did not finish its answer within ${options.responseTimeoutMs} ms`,
      url,
    )
    controller.abort()
  }, options.responseTimeoutMs)
  const failure = (error: unknown, fallback: LlmErrorCode, what: string): LlmErrorData => {
    if (signal?.aborted) return llmError('ABORTED', 'the request was aborted')
    if (timedOut) return timedOut
    const cause = (error as { cause?: { code?: string; message?: string } })?.cause
    const limit = timeoutOfCause(cause?.code)
    if (limit === 'connect') {
      return timeoutError('connectTimeoutMs', `no connection to ${label} within the connect timeout`, url)
    }
    if (limit === 'headers') {
      return timeoutError('firstByteTimeoutMs', `${label} sent no response headers within the client's limit`, url)
    }
    if (limit === 'body') {
      return timeoutError('idleTimeoutMs', `${label} sent no data within the client's body limit`, url)
    }
    const detail = redact(cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error), secret)
    return llmError(fallback, `${what}: ${detail}`)
  }

  try {
    arm(options.firstByteTimeoutMs, 'firstByteTimeoutMs', 'first data byte')
    let response: Response
    try {
      response = await options.transport.fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          'user-agent': 'dsh',
          ...(secret ? { authorization: `Bearer ${secret}` } : {}),
          ...options.headers,
        },
        // Bytes, not a string: fetch would first re-scan a string body for lone surrogates (toUSVString).
        body: Buffer.from(bodyText(body)),
        signal: controller.signal,
      })
    } catch (error) {
      return yield errorFinish(failure(error, 'NETWORK', `cannot reach ${label} at ${url}`))
    }
    const requestId = requestIdOf(response.headers)
    if (!response.ok) {
      let text = ''
      try {
        text = await readLimited(response)
      } catch {}
      let parsed: unknown
      try {
        parsed = JSON.parse(text.trim())
      } catch {}
      const provider = providerError(parsed)
      const providerMessage = redact(provider.message ?? text.slice(0, 500), secret)
      const code = statusCode(response.status, providerMessage)
      const hint = code === 'AUTH' ? `check ${route.keyName}` : HINTS[code]
      return yield errorFinish(
        llmError(
          code,
          `${label} returned HTTP ${response.status}: ${providerMessage || response.statusText}${hint ? ` (${hint})` : ''}`,
          {
            status: response.status,
            retryAfterMs: retryAfter(response.headers),
            requestId,
            providerCode: provider.code,
          },
        ),
      )
    }
    yield requestId === undefined
      ? { type: 'start', provider: call.provider, model: call.model }
      : { type: 'start', provider: call.provider, model: call.model, requestId }
    if (!response.body)
      return yield errorFinish(llmError('MALFORMED_RESPONSE', `${label} sent an empty body`, { requestId }))

    const reader = new ChunkReader()
    let done = false
    try {
      const body = await streamBody(response, label, requestId)
      if ('error' in body) return yield errorFinish(body.error)
      for await (const item of readSse(body.stream)) {
        if (item.type === 'comment') continue
        arm(options.idleTimeoutMs, 'idleTimeoutMs', 'data between stream events')
        if (item.data.trim() === '[DONE]') {
          done = true
          break
        }
        let event: unknown
        try {
          event = JSON.parse(item.data)
        } catch {
          return yield errorFinish(
            llmError(
              'MALFORMED_RESPONSE',
              `${label} sent a stream event that is not JSON: ${item.data.slice(0, 200)}`,
              {
                requestId,
              },
            ),
          )
        }
        if (!isObject(event)) {
          return yield errorFinish(
            llmError('MALFORMED_RESPONSE', `${label} sent a stream event that is not an object`, { requestId }),
          )
        }
        for (const chunk of reader.read(event, label)) yield chunk
        if (reader.error)
          return yield errorFinish(llmError(reader.error.code, reader.error.message, { ...reader.error, requestId }))
      }
    } catch (error) {
      return yield errorFinish(failure(error, 'NETWORK', `the ${label} stream broke off`))
    }
    if (!done && reader.finish === undefined) {
      return yield errorFinish(
        signal?.aborted
          ? llmError('ABORTED', 'the request was aborted')
          : llmError('NETWORK', `the ${label} stream ended before completion (no [DONE], no finish_reason)`, {
              requestId,
            }),
      )
    }
    if (reader.usage) yield { type: 'usage', usage: reader.usage }
    if (reader.finish === 'insufficient_system_resource') {
      return yield errorFinish(
        llmError('PROVIDER_UNAVAILABLE', `${label} interrupted the answer for lack of capacity; retry later`, {
          requestId,
          providerCode: 'insufficient_system_resource',
        }),
      )
    }
    let reason: FinishReason = FINISH[reader.finish ?? 'stop'] ?? 'stop'
    if (reason === 'stop' && reader.sawToolCalls) reason = 'tool-calls'
    yield { type: 'finish', reason }
  } finally {
    clearTimeout(timer)
    clearTimeout(overall)
    signal?.removeEventListener('abort', onAbort)
    controller.abort()
  }
}
