// What a Chat Completions stream says, normalized: each decoded SSE event becomes dsh stream chunks
// (reasoning, text, tool-call fragments keyed the way each server numbers them), with the usage,
// finish reason and in-band error the request ends with.
import { llmError } from './adapter.js'
import type { FinishReason, LlmErrorData, StreamChunk, Usage } from './messages.js'

export type Json = Record<string, unknown>

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined
}

/** Maps a provider usage object (DeepSeek cache fields or OpenAI `cached_tokens`). */
export function mapUsage(raw: Json): Usage {
  const input = numberOr(raw.prompt_tokens) ?? 0
  const output = numberOr(raw.completion_tokens) ?? 0
  const usage: Usage = {
    inputTokens: input,
    outputTokens: output,
    totalTokens: numberOr(raw.total_tokens) ?? input + output,
  }
  const details = isObject(raw.prompt_tokens_details) ? raw.prompt_tokens_details : {}
  const hit = numberOr(raw.prompt_cache_hit_tokens) ?? numberOr(details.cached_tokens)
  const miss = numberOr(raw.prompt_cache_miss_tokens) ?? (hit !== undefined ? input - hit : undefined)
  if (hit !== undefined) usage.cacheHitTokens = hit
  if (miss !== undefined) usage.cacheMissTokens = miss
  const completion = isObject(raw.completion_tokens_details) ? raw.completion_tokens_details : {}
  const reasoning = numberOr(completion.reasoning_tokens)
  if (reasoning !== undefined) usage.reasoningTokens = reasoning
  return usage
}

/** Reads the provider's error object: OpenAI-style `{error:{...}}` or flat vLLM `{message,type,code}`. */
export function providerError(value: unknown): { message?: string; code?: string } {
  const error = isObject(value) && isObject(value.error) ? value.error : isObject(value) ? value : {}
  const message = typeof error.message === 'string' ? error.message : undefined
  const code = typeof error.code === 'string' ? error.code : typeof error.type === 'string' ? error.type : undefined
  return { message, code }
}

export const FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'max-tokens',
  tool_calls: 'tool-calls',
  function_call: 'tool-calls',
  content_filter: 'content-filter',
}

interface CallSlot {
  index: number
  id: string
}

/** Normalizes stream events into chunks; holds the per-request accumulation state. */
export class ChunkReader {
  readonly #byIndex = new Map<number, CallSlot>()
  readonly #byId = new Map<string, CallSlot>()
  #last: CallSlot | undefined
  #next = 0
  usage: Usage | undefined
  finish: string | undefined
  error: LlmErrorData | undefined

  get sawToolCalls(): boolean {
    return this.#next > 0
  }

  /** Returns the chunks for one decoded event; sets `error` on an in-band error event. */
  read(event: Json, provider: string): StreamChunk[] {
    const out: StreamChunk[] = []
    if (isObject(event.error) || event.object === 'error') {
      const { message, code } = providerError(event)
      this.error = llmError(
        code === 'insufficient_system_resource' ? 'PROVIDER_UNAVAILABLE' : 'UNKNOWN',
        `${provider} reported an error inside the stream: ${message ?? 'no message'}`,
        { providerCode: code },
      )
      return out
    }
    if (isObject(event.usage)) this.usage = mapUsage(event.usage)
    const choices = Array.isArray(event.choices) ? event.choices : []
    for (const choice of choices) {
      if (!isObject(choice)) continue
      const delta = isObject(choice.delta) ? choice.delta : {}
      const reasoning = delta.reasoning_content ?? delta.reasoning
      if (typeof reasoning === 'string' && reasoning !== '') out.push({ type: 'reasoning-delta', text: reasoning })
      if (typeof delta.content === 'string' && delta.content !== '')
        out.push({ type: 'text-delta', text: delta.content })
      if (Array.isArray(delta.tool_calls)) for (const fragment of delta.tool_calls) this.#toolFragment(fragment, out)
      if (typeof choice.finish_reason === 'string') this.finish = choice.finish_reason
    }
    return out
  }

  #toolFragment(fragment: unknown, out: StreamChunk[]): void {
    if (!isObject(fragment)) return
    const fn = isObject(fragment.function) ? fragment.function : {}
    const id = typeof fragment.id === 'string' && fragment.id !== '' ? fragment.id : undefined
    const wireIndex = typeof fragment.index === 'number' ? fragment.index : undefined
    // Key by id when there is one, else by index; an index that repeats with a new id is a new call
    // (Ollama numbers every call 0), and a fragment with neither continues the latest call.
    let slot = id !== undefined ? this.#byId.get(id) : undefined
    if (!slot && id === undefined) slot = wireIndex !== undefined ? this.#byIndex.get(wireIndex) : this.#last
    if (!slot) {
      slot = { index: this.#next, id: id ?? `call_${this.#next}` }
      this.#next++
      this.#byId.set(slot.id, slot)
      if (wireIndex !== undefined) this.#byIndex.set(wireIndex, slot)
      out.push({
        type: 'tool-call-start',
        index: slot.index,
        id: slot.id,
        name: typeof fn.name === 'string' ? fn.name : '',
      })
    }
    this.#last = slot
    if (typeof fn.arguments === 'string' && fn.arguments !== '') {
      out.push({ type: 'tool-call-delta', index: slot.index, argumentsDelta: fn.arguments })
    }
  }
}
