// Builders for DeepSeek-faithful SSE transcripts and error bodies (shapes from
// ../shared/reference/deepseek-chat-api.md §5, §8, §9): the envelope fields on every chunk, the first
// delta of thinking mode, tool-call fragments, the `choices: []` usage chunk, then `[DONE]`.
import type { MockResponse, SseStep } from './mock-llm-server.js'

export interface ScriptedToolCall {
  id: string
  name: string
  /** One string, or the pieces the arguments arrive in (the first piece rides on the opening fragment). */
  arguments: string | string[]
}

export interface CompletionScript {
  model?: string
  /** Completion id on every chunk. Default `chatcmpl-1`. */
  id?: string
  /** Reasoning pieces (thinking mode). */
  reasoning?: string | string[]
  /** Answer pieces. */
  text?: string | string[]
  toolCalls?: ScriptedToolCall[]
  /** Default `tool_calls` when there are tool calls, else `stop`. `null` sends none. */
  finishReason?: string | null
  /** The raw usage object of the final `choices: []` chunk; `null` sends no usage chunk. */
  usage?: Record<string, unknown> | null
  /** Leading `: keep-alive` comments (queued requests). */
  keepAlives?: number
  /** First delta in thinking shape (`content: null, reasoning_content: ""`). Default: when reasoning is given. */
  thinking?: boolean
  /** Send `[DONE]` at the end (default true). */
  done?: boolean
  /** Milliseconds between chunks (slow streams). */
  delayMs?: number
}

function pieces(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** One `chat.completion.chunk` event with the DeepSeek envelope. */
export function chunkEvent(
  delta: Record<string, unknown>,
  options: { id?: string; model?: string; finishReason?: string | null; usage?: Record<string, unknown> | null } = {},
): Record<string, unknown> {
  return {
    id: options.id ?? 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1764500000,
    model: options.model ?? 'deepseek-v4-pro',
    system_fingerprint: 'fp_mock',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: options.finishReason ?? null }],
    usage: options.usage ?? null,
  }
}

/** The usage-only chunk sent before `[DONE]` when `include_usage` is on. */
export function usageEvent(usage: Record<string, unknown>, options: { id?: string; model?: string } = {}) {
  return {
    id: options.id ?? 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1764500000,
    model: options.model ?? 'deepseek-v4-pro',
    system_fingerprint: 'fp_mock',
    choices: [],
    usage,
  }
}

/** A DeepSeek usage object with consistent totals and cache fields. */
export function deepseekUsage(prompt: number, completion: number, cacheHit = 0, reasoning?: number) {
  const usage: Record<string, unknown> = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_cache_hit_tokens: cacheHit,
    prompt_cache_miss_tokens: prompt - cacheHit,
  }
  if (reasoning !== undefined) usage.completion_tokens_details = { reasoning_tokens: reasoning }
  return usage
}

/** The SSE steps of one streamed completion, from keep-alives to `[DONE]`. */
export function completionSteps(script: CompletionScript): SseStep[] {
  const envelope = { id: script.id, model: script.model }
  const reasoning = pieces(script.reasoning)
  const text = pieces(script.text)
  const calls = script.toolCalls ?? []
  const thinking = script.thinking ?? reasoning.length > 0
  const events: Record<string, unknown>[] = []
  events.push(
    chunkEvent(
      thinking ? { role: 'assistant', content: null, reasoning_content: '' } : { role: 'assistant', content: '' },
      envelope,
    ),
  )
  for (const piece of reasoning) events.push(chunkEvent({ content: null, reasoning_content: piece }, envelope))
  for (const piece of text) events.push(chunkEvent({ content: piece, reasoning_content: null }, envelope))
  calls.forEach((call, index) => {
    const [first = '', ...rest] = pieces(call.arguments)
    events.push(
      chunkEvent(
        { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: first } }] },
        envelope,
      ),
    )
    for (const piece of rest)
      events.push(chunkEvent({ tool_calls: [{ index, function: { arguments: piece } }] }, envelope))
  })
  const finish = script.finishReason === undefined ? (calls.length > 0 ? 'tool_calls' : 'stop') : script.finishReason
  if (finish !== null) events.push(chunkEvent({ content: '' }, { ...envelope, finishReason: finish }))
  const usage = script.usage === undefined ? deepseekUsage(10, 5) : script.usage
  if (usage !== null) events.push(usageEvent(usage, envelope))

  const steps: SseStep[] = []
  for (let i = 0; i < (script.keepAlives ?? 0); i++) steps.push({ comment: 'keep-alive' })
  for (const event of events) {
    if (script.delayMs) steps.push({ delayMs: script.delayMs })
    steps.push({ data: event })
  }
  if (script.done !== false) steps.push({ done: true })
  return steps
}

/** A 200 SSE response streaming `script`. */
export function completionResponse(script: CompletionScript): MockResponse {
  return { type: 'sse', steps: completionSteps(script) }
}

/** An HTTP error with the OpenAI/DeepSeek error body `{ error: { message, type, param, code } }`. */
export function errorResponse(
  status: number,
  message: string,
  options: { type?: string; code?: string; headers?: Record<string, string> } = {},
): MockResponse {
  const type = options.type ?? 'invalid_request_error'
  return {
    type: 'json',
    status,
    body: { error: { message, type, param: null, code: options.code ?? type } },
    headers: options.headers,
  }
}
