// A session's model requests as steps, folded from its log (nothing runs): each request as the model
// saw it (config, system prompt and tools resolved through their content hashes, the messages folded
// as the loop folds them), the answer that followed, and its tool calls with their results. What
// `dsh replay --step` and the web page's step-through show, and what replay compares. Takes raw
// records, so stored logs are read without validating them.

import type { SessionEvent } from './events.js'
import { foldMessages } from './log.js'

type Raw = Record<string, unknown>

function isRaw(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** An event as this module reads it: any envelope, declared or not. */
export type StepEvent = { seq: number; type: string; data: unknown }

/** A request as it was sent: its header's seq, config, system prompt, tool schemas and messages. */
export type LoggedRequest = {
  seq: number
  config: unknown
  system: string
  tools: unknown[]
  messages: unknown[]
}

/** One tool call of an answer, with the result the model read. */
export type StepCall = { id: string; name: string; args: string; result?: string; error?: boolean }

/** A request, the answer's text and its tool calls. */
export type SessionStep = { request: LoggedRequest; answer: string; calls: StepCall[] }

/** The text of a content array (blocks that are not text as `[type]`). */
export function contentText(content: unknown): string {
  if (!Array.isArray(content)) return typeof content === 'string' ? content : ''
  return content
    .map((block) => (isRaw(block) ? (typeof block.text === 'string' ? block.text : `[${String(block.type)}]`) : ''))
    .join('')
}

/** Every request of a log, bodies resolved through their content hashes, messages folded as the loop does. */
export function loggedRequests(
  events: readonly StepEvent[],
  fold: (events: readonly StepEvent[]) => unknown[] = (before) => foldMessages(before as SessionEvent[]),
): LoggedRequest[] {
  const systems = new Map<string, string>()
  const toolsets = new Map<string, unknown[]>()
  const out: LoggedRequest[] = []
  for (const event of events) {
    if (event.type !== 'request/header' || !isRaw(event.data)) continue
    const data = event.data
    const system = typeof data.system === 'string' ? data.system : undefined
    const tools = Array.isArray(data.tools) ? (data.tools as unknown[]) : undefined
    if (typeof data.systemHash === 'string' && system !== undefined) systems.set(data.systemHash, system)
    if (typeof data.toolsHash === 'string' && tools !== undefined) toolsets.set(data.toolsHash, tools)
    out.push({
      seq: event.seq,
      config: data.config,
      system: system ?? (typeof data.systemHash === 'string' ? (systems.get(data.systemHash) ?? '') : ''),
      tools: tools ?? (typeof data.toolsHash === 'string' ? (toolsets.get(data.toolsHash) ?? []) : []),
      messages: fold(events.slice(0, event.seq)),
    })
  }
  return out
}

/** The steps of a log: each request with the answer that followed it and its tool results. */
export function sessionSteps(events: readonly StepEvent[]): SessionStep[] {
  const requests = loggedRequests(events)
  return requests.map((request, index) => {
    const end = requests[index + 1]?.seq ?? Number.POSITIVE_INFINITY
    const after = events.filter((event) => event.seq > request.seq && event.seq < end)
    const message = after.find((event) => event.type === 'assistant/message')
    const body = message && isRaw(message.data) ? message.data.message : undefined
    const content = isRaw(body) && Array.isArray(body.content) ? body.content : []
    const calls: StepCall[] = []
    for (const block of content) {
      if (!isRaw(block) || block.type !== 'tool-call') continue
      calls.push({ id: String(block.id), name: String(block.name), args: JSON.stringify(block.arguments ?? {}) })
    }
    for (const event of after) {
      if (event.type !== 'tool/result' || !isRaw(event.data) || !isRaw(event.data.message)) continue
      const result = event.data.message
      const call = calls.find((candidate) => candidate.id === result.toolCallId)
      if (!call) continue
      call.result = contentText(result.content)
      call.error = result.isError === true
    }
    const answer = contentText(content.filter((block) => isRaw(block) && block.type === 'text'))
    return { request, answer, calls }
  })
}
