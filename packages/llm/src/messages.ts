// The model vocabulary shared by every dsh package: messages and their content blocks, usage, the
// call config recorded in `request/header`, and the stream chunks adapters emit. Plain JSON data only.

/** Plain text. */
export interface TextBlock {
  type: 'text'
  text: string
}

/** Model reasoning ("thinking"). `signature` is an opaque provider token some APIs need echoed back. */
export interface ReasoningBlock {
  type: 'reasoning'
  text: string
  signature?: string
}

/** An image by content-addressed reference (`sha256:<hex>`), never inline bytes. */
export interface ImageBlock {
  type: 'image'
  ref: string
  mimeType: string
}

/**
 * A tool call the model asked for. `arguments` is the parsed JSON object; when the model sent
 * invalid JSON, `arguments` is `{}`, `rawArguments` keeps the text and `argumentsError` says why,
 * so the tool layer can answer the model with an error result instead of crashing.
 */
export interface ToolCallBlock {
  type: 'tool-call'
  id: string
  name: string
  arguments: Record<string, unknown>
  rawArguments?: string
  argumentsError?: string
}

export type UserContent = TextBlock | ImageBlock
export type AssistantContent = TextBlock | ReasoningBlock | ToolCallBlock
export type ToolResultContent = TextBlock | ImageBlock

export interface UserMessage {
  role: 'user'
  content: UserContent[]
}

/** Why the model stopped. `error` and `aborted` only ever come with a terminal error chunk. */
export type FinishReason = 'stop' | 'tool-calls' | 'max-tokens' | 'content-filter' | 'error' | 'aborted'

export interface AssistantMessage {
  role: 'assistant'
  content: AssistantContent[]
  finishReason: FinishReason
  usage?: Usage
  /** Which provider/model produced it (for display and replay). */
  provider?: string
  model?: string
  /** Present when `finishReason` is `error` or `aborted`: what went wrong. */
  error?: LlmErrorData
}

export interface ToolResultMessage {
  role: 'tool'
  toolCallId: string
  toolName: string
  content: ToolResultContent[]
  isError: boolean
}

export type Message = UserMessage | AssistantMessage | ToolResultMessage

/** Token usage as the provider reported it. Cache fields are present when the provider reports them. */
export interface Usage {
  inputTokens: number
  outputTokens: number
  totalTokens: number
  /** Prompt tokens served from the provider's prefix cache (DeepSeek `prompt_cache_hit_tokens`). */
  cacheHitTokens?: number
  /** Prompt tokens not served from cache (DeepSeek `prompt_cache_miss_tokens`). */
  cacheMissTokens?: number
  /** Prompt tokens written to the provider's cache (Anthropic cache creation), part of `inputTokens`. */
  cacheWriteTokens?: number
  reasoningTokens?: number
}

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'max'

/** What a request is configured with; recorded verbatim in `request/header`. Never holds credentials. */
export interface LlmCallConfig {
  provider: string
  model: string
  reasoningEffort?: ReasoningEffort
  temperature?: number
  maxTokens?: number
  stop?: string[]
}

/** A tool as the model sees it. `parameters` is a JSON Schema object. */
export interface ToolSchema {
  name: string
  description: string
  parameters: Record<string, unknown>
}

/** The data of an LlmError: a stable code plus frozen facts (HTTP status, retry-after, request id). */
export interface LlmErrorData {
  code: LlmErrorCode
  message: string
  status?: number
  retryAfterMs?: number
  requestId?: string
  providerCode?: string
}

export type LlmErrorCode =
  | 'AUTH'
  | 'RATE_LIMIT'
  | 'INSUFFICIENT_BALANCE'
  | 'CONTEXT_OVERFLOW'
  | 'BAD_REQUEST'
  | 'PROVIDER_UNAVAILABLE'
  | 'NETWORK'
  | 'NO_ADAPTER'
  | 'MALFORMED_RESPONSE'
  | 'ABORTED'
  | 'TIMEOUT'
  | 'REPLAY_EXHAUSTED'
  | 'UNKNOWN'

/**
 * What an adapter stream yields. Every stream ends with exactly one `finish` chunk; failures are a
 * `finish` with reason `error` or `aborted` and an `error`, never a thrown exception.
 */
export type StreamChunk =
  | { type: 'start'; provider: string; model: string; requestId?: string }
  | { type: 'text-delta'; text: string }
  /** `signature` (when a provider sends one) belongs to the reasoning block this delta extends. */
  | { type: 'reasoning-delta'; text: string; signature?: string }
  | { type: 'tool-call-start'; index: number; id: string; name: string }
  | { type: 'tool-call-delta'; index: number; argumentsDelta: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'finish'; reason: FinishReason; error?: LlmErrorData }
