// Small builders shared by the session tests.
import type { AssistantMessage, ToolResultMessage, UserMessage } from '@dsh/llm'

export const user = (text: string): UserMessage => ({ role: 'user', content: [{ type: 'text', text }] })

export const assistant = (text: string, calls: { id: string; name: string }[] = []): AssistantMessage => ({
  role: 'assistant',
  content: [
    ...(text ? [{ type: 'text' as const, text }] : []),
    ...calls.map((call) => ({ type: 'tool-call' as const, id: call.id, name: call.name, arguments: {} })),
  ],
  finishReason: calls.length ? 'tool-calls' : 'stop',
})

export const toolResult = (id: string, text: string): ToolResultMessage => ({
  role: 'tool',
  toolCallId: id,
  toolName: 'echo',
  content: [{ type: 'text', text }],
  isError: false,
})
