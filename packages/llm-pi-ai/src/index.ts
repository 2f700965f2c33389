// The `pi-ai` provider plugin: reaches Anthropic, OpenAI, Google, Mistral, Bedrock and the other
// providers of @mariozechner/pi-ai through one adapter. It maps dsh messages to pi-ai's context, pi-ai
// events to dsh chunks, and pi-ai failures to terminal chunks. Retries are off (no hidden retry).
// pi-ai (and the SDKs it loads) is imported on the first request or catalog load, not at boot.

import type { Context } from '@dsh/kernel'
import {
  errorFinish,
  type ImageBlock,
  imageMissing,
  imagePlaceholder,
  type LlmAdapter,
  type LlmDispatch,
  type LlmErrorCode,
  llmError,
  type Message,
  type ModelInfo,
  type ProviderCatalog,
  type ReasoningEffort,
  type StreamChunk,
} from '@dsh/llm'
import type { CredentialsService } from '@dsh/settings/credentials'
import type {
  Api,
  AssistantMessageEvent,
  Model,
  AssistantMessage as PiAssistantMessage,
  Context as PiContext,
  Message as PiMessage,
  StopReason,
  ThinkingLevel,
  Tool,
} from '@mariozechner/pi-ai'
import { baseUrlVariable, PI_AI_PROVIDERS } from './providers.js'

type PiAi = typeof import('@mariozechner/pi-ai')

export interface PiAiConfig {
  /** dsh provider names served by this row; each is a pi-ai provider id. Default: every pi-ai provider but `deepseek`. */
  providers?: string[]
  /** Default model per provider (else the first model pi-ai lists for it). */
  defaultModels?: Record<string, string>
  /** Extra pi-ai `Model` objects per provider (custom endpoints); they take precedence over pi-ai's list. */
  models?: Record<string, Model<Api>[]>
  /** Credential reference per provider. Default: pi-ai's variable names (e.g. ANTHROPIC_API_KEY). */
  apiKeys?: Record<string, string>
  /**
   * Bound on one whole response, request to last event, however steadily it streams (as the native
   * adapters' option of that name). Default 600000 (10 min); raise it for very long answers.
   */
  responseTimeoutMs?: number
}

/** The default of `responseTimeoutMs` (the native adapters' default). */
const RESPONSE_TIMEOUT_MS = 600_000

export { baseUrlVariable, PI_AI_PROVIDERS } from './providers.js'

/** dsh effort names against pi-ai thinking levels: `none` is pi-ai `off`, `max` is pi-ai `xhigh`. */
const TO_PI: Record<Exclude<ReasoningEffort, 'none'>, ThinkingLevel> = {
  minimal: 'minimal',
  low: 'low',
  medium: 'medium',
  high: 'high',
  max: 'xhigh',
}
const FROM_PI: Record<string, ReasoningEffort> = {
  off: 'none',
  minimal: 'minimal',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'max',
}

function knownModels(pi: PiAi | undefined, provider: string, config: PiAiConfig): Model<Api>[] {
  const extra = config.models?.[provider] ?? []
  let builtin: Model<Api>[] = []
  try {
    builtin = (pi?.getModels(provider as never) as Model<Api>[] | undefined) ?? []
  } catch {}
  return [...extra, ...builtin]
}

/**
 * The pi-ai model for `provider`/`id`. A model pi-ai does not list is still requested (the catalog is
 * advisory): it borrows the API and endpoint of the provider's first model.
 */
export function resolveModel(pi: PiAi, provider: string, id: string, config: PiAiConfig): Model<Api> | undefined {
  const models = knownModels(pi, provider, config)
  const found = models.find((model) => model.id === id)
  if (found) return found
  try {
    const builtin = pi.getModel(provider as never, id as never) as Model<Api> | undefined
    if (builtin) return builtin
  } catch {}
  const template = models[0]
  return template && { ...template, id, name: id }
}

function piAssistant(
  message: Extract<Message, { role: 'assistant' }>,
  model: Model<Api>,
  provider: string,
): PiAssistantMessage {
  const own = message.provider === provider && message.model === model.id
  const stop: Record<string, StopReason> = {
    'tool-calls': 'toolUse',
    'max-tokens': 'length',
    error: 'error',
    aborted: 'aborted',
  }
  return {
    role: 'assistant',
    content: message.content.map((block) => {
      if (block.type === 'text') return { type: 'text', text: block.text }
      if (block.type === 'reasoning') {
        return own && block.signature !== undefined
          ? { type: 'thinking', thinking: block.text, thinkingSignature: block.signature }
          : { type: 'thinking', thinking: block.text }
      }
      return { type: 'toolCall', id: block.id, name: block.name, arguments: block.arguments }
    }),
    // pi-ai rewrites replay state (signatures, thinking) of messages from another api/provider/model.
    api: own ? model.api : 'dsh-foreign',
    provider: message.provider ?? 'unknown',
    model: message.model ?? 'unknown',
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: stop[message.finishReason] ?? 'stop',
    timestamp: 0,
  }
}

async function piContext(dispatch: LlmDispatch, model: Model<Api>): Promise<PiContext> {
  const { request, call } = dispatch
  const textOnly = !model.input.includes('image')
  const image = async (block: ImageBlock) => {
    if (textOnly) return { type: 'text' as const, text: imagePlaceholder(block, model.id) }
    if (!request.loadImage)
      return { type: 'text' as const, text: imageMissing(block, 'no image loader for this request') }
    try {
      const data = Buffer.from(await request.loadImage(block.ref)).toString('base64')
      return { type: 'image' as const, data, mimeType: block.mimeType }
    } catch (error) {
      return {
        type: 'text' as const,
        text: imageMissing(block, error instanceof Error ? error.message : String(error)),
      }
    }
  }
  const messages: PiMessage[] = []
  for (const message of request.messages) {
    if (message.role === 'assistant') {
      messages.push(piAssistant(message, model, call.provider))
      continue
    }
    const content = await Promise.all(
      message.content.map((block) =>
        block.type === 'text' ? { type: 'text' as const, text: block.text } : image(block),
      ),
    )
    if (message.role === 'user') messages.push({ role: 'user', content, timestamp: 0 })
    else {
      messages.push({
        role: 'toolResult',
        toolCallId: message.toolCallId,
        toolName: message.toolName,
        content,
        isError: message.isError,
        timestamp: 0,
      })
    }
  }
  const tools = request.tools?.map((tool) => ({ ...tool }) as unknown as Tool)
  return { systemPrompt: request.system, messages, ...(tools && tools.length > 0 ? { tools } : {}) }
}

const STATUS = /\b(400|401|402|403|404|413|422|429|500|502|503|504|529)\b/

function classify(message: string): { code: LlmErrorCode; status?: number } {
  const status = Number(STATUS.exec(message)?.[1]) || undefined
  if (status === 401 || status === 403 || /api key|unauthori[sz]ed|authentication/i.test(message)) {
    return { code: 'AUTH', status }
  }
  if (status === 402 || /insufficient (balance|credit|funds)/i.test(message))
    return { code: 'INSUFFICIENT_BALANCE', status }
  if (status === 429 || /rate limit/i.test(message)) return { code: 'RATE_LIMIT', status }
  if (status === 413 || /context (length|window)|too many tokens|prompt is too long/i.test(message)) {
    return { code: 'CONTEXT_OVERFLOW', status }
  }
  if (status !== undefined && status >= 500) return { code: 'PROVIDER_UNAVAILABLE', status }
  if (status !== undefined) return { code: 'BAD_REQUEST', status }
  if (/fetch failed|ECONNREFUSED|ENOTFOUND|ETIMEDOUT|socket|network|connection/i.test(message))
    return { code: 'NETWORK' }
  return { code: 'UNKNOWN' }
}

/** Creates the adapter for the row's providers. `load` imports pi-ai (once; tests may pass their own). */
export function createPiAiAdapter(
  credentials: CredentialsService,
  config: PiAiConfig,
  load: () => Promise<PiAi> = () => import('@mariozechner/pi-ai'),
): LlmAdapter {
  let pi: PiAi | undefined
  let loading: Promise<PiAi> | undefined
  const ready = async (): Promise<PiAi> => {
    loading ??= load().then((module) => {
      pi = module
      return module
    })
    return loading
  }
  const efforts = (model: Model<Api>): ReasoningEffort[] =>
    model.reasoning && pi ? pi.getSupportedThinkingLevels(model).flatMap((level) => FROM_PI[level] ?? []) : ['none']
  const modelInfo = (model: Model<Api>): ModelInfo => ({
    id: model.id,
    label: model.name,
    contextWindow: model.contextWindow,
    maxOutputTokens: model.maxTokens,
    reasoningEfforts: efforts(model),
    reasoning: model.reasoning,
    input: [...model.input],
    cost: { ...model.cost },
  })
  const defaultModel = (provider: string) =>
    config.defaultModels?.[provider] ?? knownModels(pi, provider, config)[0]?.id ?? ''
  const catalog = (provider: string): ProviderCatalog => ({
    provider,
    defaultModel: defaultModel(provider),
    models: knownModels(pi, provider, config).map(modelInfo),
  })
  const keyNames = (provider: string): readonly string[] => {
    const named = config.apiKeys?.[provider]
    return named ? [named] : (PI_AI_PROVIDERS[provider] ?? [])
  }
  const findKey = async (provider: string): Promise<{ value: string; name: string; location: string } | undefined> => {
    for (const name of keyNames(provider)) {
      const found = await credentials.resolve(name)
      if (found) return { value: found.value, name, location: found.location }
    }
    return undefined
  }

  return {
    name: 'pi-ai',
    catalog,
    async loadCatalog(provider) {
      await ready()
      return catalog(provider)
    },
    async configured(provider) {
      if (config.models?.[provider]) return true
      return keyNames(provider).length > 0 && (await findKey(provider)) !== undefined
    },
    async access(provider, id) {
      const names = keyNames(provider)
      const found = await findKey(provider).catch(() => undefined)
      const override = await credentials.get(baseUrlVariable(provider)).catch(() => undefined)
      let url = override
      if (!url) {
        try {
          url = resolveModel(await ready(), provider, id || defaultModel(provider), config)?.baseUrl
        } catch {}
      }
      return {
        ...(url ? { url } : {}),
        urlVariable: baseUrlVariable(provider),
        keyNames: names,
        keyRequired: names.length > 0 && !config.models?.[provider],
        ...(found ? { key: { name: found.name, location: found.location } } : {}),
      }
    },
    defaults: (provider) => ({ model: defaultModel(provider) }),
    reasoningEfforts(provider, id) {
      const model = knownModels(pi, provider, config).find((m) => m.id === id)
      return model ? efforts(model) : undefined
    },
    async *stream(dispatch): AsyncGenerator<StreamChunk> {
      const { call, request } = dispatch
      let module: PiAi
      try {
        module = await ready()
      } catch (error) {
        yield errorFinish(llmError('PROVIDER_UNAVAILABLE', `cannot load pi-ai: ${(error as Error).message}`))
        return
      }
      const found = resolveModel(module, call.provider, call.model, config)
      if (!found) {
        yield errorFinish(
          llmError('BAD_REQUEST', `pi-ai knows no models for provider "${call.provider}"; add one under \`models\``),
        )
        return
      }
      let key: { value: string } | undefined
      let baseUrl: string | undefined
      try {
        key = await findKey(call.provider)
        baseUrl = await credentials.get(baseUrlVariable(call.provider))
      } catch (error) {
        yield errorFinish(llmError('AUTH', `cannot resolve the ${call.provider} key: ${(error as Error).message}`))
        return
      }
      // <PROVIDER>_BASE_URL (env, credentials file or .env) points the provider at a proxy or a local mock.
      const model = baseUrl ? { ...found, baseUrl } : found
      const names = keyNames(call.provider)
      if (names.length > 0 && !key && !config.models?.[call.provider]) {
        yield errorFinish(
          llmError(
            'AUTH',
            `no API key for ${call.provider}: set ${names.join(' or ')} in the environment, with dsh config set ${names.at(-1)} KEY, or in .env`,
          ),
        )
        return
      }
      const secret = key?.value
      const redact = (text: string) => (secret ? text.split(secret).join('[redacted]') : text)
      const effort = call.reasoningEffort
      // The whole response's bound: it aborts pi-ai's request, and ends this stream even if pi-ai does
      // not stop (each event is raced against it), with a TIMEOUT naming the option.
      const responseTimeoutMs = config.responseTimeoutMs ?? RESPONSE_TIMEOUT_MS
      const controller = new AbortController()
      const onAbort = () => controller.abort()
      request.signal?.addEventListener('abort', onAbort, { once: true })
      if (request.signal?.aborted) controller.abort()
      let expire = () => {}
      const expired = new Promise<{ expired: true }>((resolve) => {
        expire = () => resolve({ expired: true })
      })
      const overall = setTimeout(() => {
        expire()
        controller.abort()
      }, responseTimeoutMs)
      const timeout = () =>
        errorFinish(
          llmError(
            'TIMEOUT',
            `${call.provider} via pi-ai did not finish its answer within ${responseTimeoutMs} ms (responseTimeoutMs); raise responseTimeoutMs in the provider row if the model needs longer`,
          ),
        )
      const toolIndex = new Map<number, number>()
      const streamed = new Set<number>()
      try {
        const events = module.streamSimple(model, await piContext(dispatch, model), {
          signal: controller.signal,
          maxRetries: 0,
          ...(secret ? { apiKey: secret } : {}),
          ...(call.maxTokens !== undefined ? { maxTokens: call.maxTokens } : {}),
          ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
          ...(effort !== undefined && effort !== 'none' ? { reasoning: TO_PI[effort] } : {}),
        })
        const iterator: AsyncIterator<AssistantMessageEvent> = events[Symbol.asyncIterator]()
        while (true) {
          const next = await Promise.race([iterator.next(), expired])
          if ('expired' in next) {
            void iterator.return?.()?.catch?.(() => {})
            yield timeout()
            return
          }
          if (next.done) break
          const event = next.value
          switch (event.type) {
            case 'start':
              yield { type: 'start', provider: call.provider, model: call.model }
              break
            case 'text_delta':
              yield { type: 'text-delta', text: event.delta }
              break
            case 'thinking_delta':
              yield { type: 'reasoning-delta', text: event.delta }
              break
            case 'thinking_end': {
              const block = event.partial.content[event.contentIndex]
              if (block?.type === 'thinking' && block.thinkingSignature) {
                yield { type: 'reasoning-delta', text: '', signature: block.thinkingSignature }
              }
              break
            }
            case 'toolcall_start': {
              const block = event.partial.content[event.contentIndex]
              const index = toolIndex.size
              toolIndex.set(event.contentIndex, index)
              const id = block?.type === 'toolCall' ? block.id : `call_${index}`
              yield { type: 'tool-call-start', index, id, name: block?.type === 'toolCall' ? block.name : '' }
              break
            }
            case 'toolcall_delta': {
              const index = toolIndex.get(event.contentIndex)
              if (index === undefined || event.delta === '') break
              streamed.add(index)
              yield { type: 'tool-call-delta', index, argumentsDelta: event.delta }
              break
            }
            case 'toolcall_end': {
              const index = toolIndex.get(event.contentIndex)
              if (index !== undefined && !streamed.has(index)) {
                yield { type: 'tool-call-delta', index, argumentsDelta: JSON.stringify(event.toolCall.arguments) }
              }
              break
            }
            case 'done': {
              const usage = event.message.usage
              yield {
                type: 'usage',
                usage: {
                  inputTokens: usage.input + usage.cacheRead + usage.cacheWrite,
                  outputTokens: usage.output,
                  totalTokens: usage.totalTokens,
                  cacheHitTokens: usage.cacheRead,
                  cacheMissTokens: usage.input + usage.cacheWrite,
                  ...(usage.cacheWrite > 0 ? { cacheWriteTokens: usage.cacheWrite } : {}),
                },
              }
              const reason = { stop: 'stop', length: 'max-tokens', toolUse: 'tool-calls' } as const
              yield { type: 'finish', reason: reason[event.reason] }
              return
            }
            case 'error': {
              const message = redact(event.error.errorMessage ?? 'pi-ai reported an error')
              if (request.signal?.aborted) {
                yield errorFinish(llmError('ABORTED', 'the request was aborted'))
              } else if (controller.signal.aborted) {
                yield timeout()
              } else if (event.reason === 'aborted') {
                yield errorFinish(llmError('ABORTED', 'the request was aborted'))
              } else {
                const { code, status } = classify(message)
                yield errorFinish(llmError(code, `${call.provider} via pi-ai: ${message}`, { status }))
              }
              return
            }
          }
        }
      } finally {
        clearTimeout(overall)
        request.signal?.removeEventListener('abort', onAbort)
      }
    },
  }
}

/** The `pi-ai` provider row: `use: "@dsh/llm-pi-ai"`. */
export default {
  name: 'llm-pi-ai',
  inject: ['llm', 'credentials'],
  apply(ctx: Context, config: PiAiConfig = {}) {
    const providers = config?.providers ?? Object.keys(PI_AI_PROVIDERS)
    ctx.llm.registerAdapter(providers, createPiAiAdapter(ctx.credentials, config ?? {}))
  },
}
