// Builders for Anthropic Messages SSE transcripts (the real event sequence of `POST /v1/messages` with
// `stream: true`): `message_start`, per block `content_block_start` / `content_block_delta` /
// `content_block_stop` (text, thinking with its signature, tool_use with `input_json_delta` pieces),
// `ping`, `message_delta` with the stop reason and output usage, `message_stop`. Each event is sent
// as `event: <type>` plus `data: <JSON>`.

import type { ScriptedToolCall } from './deepseek-wire.js'
import type { MockResponse, SseStep } from './mock-llm-server.js'

export interface AnthropicScript {
  model?: string
  /** Message id. Default `msg_mock_1`. */
  id?: string
  /** Thinking pieces; a thinking block comes first, closed with `signature`. */
  thinking?: string | string[]
  /** The signature of the thinking block. Default `sig-mock`. */
  signature?: string
  text?: string | string[]
  toolCalls?: ScriptedToolCall[]
  /** Default `tool_use` when there are tool calls, else `end_turn`. */
  stopReason?: string
  inputTokens?: number
  outputTokens?: number
}

function pieces(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** One SSE event in Anthropic's framing. */
export function anthropicEvent(type: string, data: Record<string, unknown>): SseStep {
  return { event: type, data: { type, ...data } }
}

/** A whole streamed Messages response. */
export function anthropicResponse(script: AnthropicScript): MockResponse {
  const steps: SseStep[] = []
  const model = script.model ?? 'claude-mock'
  steps.push(
    anthropicEvent('message_start', {
      message: {
        id: script.id ?? 'msg_mock_1',
        type: 'message',
        role: 'assistant',
        content: [],
        model,
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: script.inputTokens ?? 10, output_tokens: 1 },
      },
    }),
  )
  let index = 0
  const thinking = pieces(script.thinking)
  if (thinking.length > 0) {
    steps.push(anthropicEvent('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } }))
    for (const piece of thinking) {
      steps.push(anthropicEvent('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } }))
    }
    steps.push(
      anthropicEvent('content_block_delta', {
        index,
        delta: { type: 'signature_delta', signature: script.signature ?? 'sig-mock' },
      }),
    )
    steps.push(anthropicEvent('content_block_stop', { index }))
    index++
  }
  steps.push(anthropicEvent('ping', {}))
  const text = pieces(script.text)
  if (text.length > 0) {
    steps.push(anthropicEvent('content_block_start', { index, content_block: { type: 'text', text: '' } }))
    for (const piece of text) {
      steps.push(anthropicEvent('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }))
    }
    steps.push(anthropicEvent('content_block_stop', { index }))
    index++
  }
  for (const call of script.toolCalls ?? []) {
    steps.push(
      anthropicEvent('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
      }),
    )
    for (const piece of pieces(call.arguments)) {
      steps.push(
        anthropicEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }),
      )
    }
    steps.push(anthropicEvent('content_block_stop', { index }))
    index++
  }
  const stopReason = script.stopReason ?? ((script.toolCalls?.length ?? 0) > 0 ? 'tool_use' : 'end_turn')
  steps.push(
    anthropicEvent('message_delta', {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: script.outputTokens ?? 5 },
    }),
  )
  steps.push(anthropicEvent('message_stop', {}))
  return { type: 'sse', steps }
}
