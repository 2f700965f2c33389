// The block assembler: folds a chunk stream into the final assistant message. Adjacent deltas of one
// kind join into one block; tool-call arguments are parsed once, at the end.
import type {
  AssistantContent,
  AssistantMessage,
  FinishReason,
  LlmErrorData,
  StreamChunk,
  ToolCallBlock,
  Usage,
} from './messages.js'

interface PendingCall {
  id: string
  name: string
  args: string
}

type Slot = { kind: 'text' | 'reasoning'; text: string; signature?: string } | { kind: 'tool'; index: number }

/** The outcome of parsing tool-call arguments; an unparsable text is kept, never thrown. */
export function parseToolArguments(
  raw: string,
): { arguments: Record<string, unknown> } | { arguments: Record<string, unknown>; error: string } {
  if (raw.trim() === '') return { arguments: {} }
  try {
    const value: unknown = JSON.parse(raw)
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      return { arguments: value as Record<string, unknown> }
    }
    return {
      arguments: {},
      error: `tool arguments must be a JSON object, got ${Array.isArray(value) ? 'array' : typeof value}`,
    }
  } catch (error) {
    return { arguments: {}, error: `invalid JSON in tool arguments: ${(error as Error).message}` }
  }
}

/**
 * Collects chunks with `push` and builds the message with `finish`. Rules:
 * - tool calls are keyed by their stream `index`; deltas for an unknown index are ignored;
 * - invalid argument JSON becomes `{}` plus `rawArguments`/`argumentsError` (the tool layer answers it);
 * - `max-tokens` drops tool calls whose arguments do not parse (they were cut off);
 * - `error`/`aborted` drop every tool call: a failed stream never asks for tool execution.
 * Chunks after the first `finish` are ignored. `finish()` without a finish chunk reports an error.
 */
export class MessageAssembler {
  readonly #slots: Slot[] = []
  readonly #calls = new Map<number, PendingCall>()
  #provider: string | undefined
  #model: string | undefined
  #usage: Usage | undefined
  #reason: FinishReason | undefined
  #error: LlmErrorData | undefined

  /** True once a `finish` chunk was pushed. */
  get finished(): boolean {
    return this.#reason !== undefined
  }

  push(chunk: StreamChunk): void {
    if (this.#reason !== undefined) return
    switch (chunk.type) {
      case 'start':
        this.#provider = chunk.provider
        this.#model = chunk.model
        return
      case 'text-delta':
      case 'reasoning-delta': {
        const signature = chunk.type === 'reasoning-delta' ? chunk.signature : undefined
        if (chunk.text === '' && signature === undefined) return
        const kind = chunk.type === 'text-delta' ? 'text' : 'reasoning'
        const previous = this.#slots.at(-1)
        let slot: { kind: 'text' | 'reasoning'; text: string; signature?: string }
        if (previous && previous.kind === kind) {
          slot = previous
          slot.text += chunk.text
        } else {
          slot = { kind, text: chunk.text }
          this.#slots.push(slot)
        }
        if (signature !== undefined) slot.signature = signature
        return
      }
      case 'tool-call-start':
        if (this.#calls.has(chunk.index)) return
        this.#calls.set(chunk.index, { id: chunk.id, name: chunk.name, args: '' })
        this.#slots.push({ kind: 'tool', index: chunk.index })
        return
      case 'tool-call-delta': {
        const call = this.#calls.get(chunk.index)
        if (call) call.args += chunk.argumentsDelta
        return
      }
      case 'usage':
        this.#usage = chunk.usage
        return
      case 'finish':
        this.#reason = chunk.reason
        this.#error = chunk.error
        return
    }
  }

  /** Builds the assistant message from what was pushed so far. */
  finish(): AssistantMessage {
    let reason = this.#reason
    let error = this.#error
    if (reason === undefined) {
      reason = 'error'
      error = { code: 'MALFORMED_RESPONSE', message: 'the stream ended without a finish chunk' }
    }
    const content: AssistantContent[] = []
    for (const slot of this.#slots) {
      if (slot.kind !== 'tool') {
        if (slot.kind === 'text') content.push({ type: 'text', text: slot.text })
        else if (slot.signature === undefined) content.push({ type: 'reasoning', text: slot.text })
        else content.push({ type: 'reasoning', text: slot.text, signature: slot.signature })
        continue
      }
      if (reason === 'error' || reason === 'aborted') continue
      const call = this.#calls.get(slot.index) as PendingCall
      const parsed = parseToolArguments(call.args)
      if ('error' in parsed && reason === 'max-tokens') continue
      const block: ToolCallBlock = { type: 'tool-call', id: call.id, name: call.name, arguments: parsed.arguments }
      if ('error' in parsed) {
        block.rawArguments = call.args
        block.argumentsError = parsed.error
      }
      content.push(block)
    }
    const message: AssistantMessage = { role: 'assistant', content, finishReason: reason }
    if (this.#usage) message.usage = this.#usage
    if (this.#provider !== undefined) message.provider = this.#provider
    if (this.#model !== undefined) message.model = this.#model
    if (error) message.error = error
    return message
  }
}

/** Drains a chunk stream into its final assistant message. */
export async function assembleMessage(
  chunks: AsyncIterable<StreamChunk> | Iterable<StreamChunk>,
): Promise<AssistantMessage> {
  const assembler = new MessageAssembler()
  for await (const chunk of chunks) assembler.push(chunk)
  return assembler.finish()
}

/**
 * The chunk sequence that assembles back into `message` (replay and scripted adapters use it).
 * Valid tool arguments are re-serialized; recorded invalid ones are replayed verbatim.
 */
export function messageToChunks(message: AssistantMessage): StreamChunk[] {
  const chunks: StreamChunk[] = []
  if (message.provider !== undefined && message.model !== undefined) {
    chunks.push({ type: 'start', provider: message.provider, model: message.model })
  }
  let index = 0
  for (const block of message.content) {
    if (block.type === 'text') chunks.push({ type: 'text-delta', text: block.text })
    else if (block.type === 'reasoning') {
      chunks.push(
        block.signature === undefined
          ? { type: 'reasoning-delta', text: block.text }
          : { type: 'reasoning-delta', text: block.text, signature: block.signature },
      )
    } else {
      chunks.push({ type: 'tool-call-start', index, id: block.id, name: block.name })
      const args = block.rawArguments ?? JSON.stringify(block.arguments)
      chunks.push({ type: 'tool-call-delta', index, argumentsDelta: args })
      index++
    }
  }
  if (message.usage) chunks.push({ type: 'usage', usage: message.usage })
  chunks.push(
    message.error
      ? { type: 'finish', reason: message.finishReason, error: message.error }
      : { type: 'finish', reason: message.finishReason },
  )
  return chunks
}
