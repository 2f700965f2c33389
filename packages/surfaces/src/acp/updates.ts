// Session events as ACP `session/update`s: live (committed events of a prompt) and replayed (the
// transcript of a loaded session). Pure functions of the log plus the tool registry's presentation.
import type * as acp from '@agentclientprotocol/sdk'
import type { ToolPresentation } from '@dsh/agent/tools'
// Declares the `todo/write` event this module maps to ACP plans.
import type {} from '@dsh/interaction/work-state'
import type { ToolCallBlock, ToolResultMessage } from '@dsh/llm'
import type { SessionEvent } from '@dsh/session'

/** Looks up how a tool presents a call (undefined for an unknown tool or invalid args). */
export type PresentationOf = (call: ToolCallBlock) => ToolPresentation | undefined

const KIND_BY_NAME: Record<string, acp.ToolKind> = {
  read: 'read',
  read_file: 'read',
  ls: 'search',
  glob: 'search',
  grep: 'search',
  search: 'search',
  fetch: 'fetch',
  web_fetch: 'fetch',
  web_search: 'fetch',
  todo_write: 'think',
}

function text(value: string): acp.ContentBlock {
  return { type: 'text', text: value }
}

/** The content a call is announced with: its diff, or its command for a terminal. */
export function callContent(presentation: ToolPresentation | undefined): acp.ToolCallContent[] {
  if (presentation?.kind === 'diff' && presentation.after !== undefined) {
    return [
      { type: 'diff', path: presentation.path, oldText: presentation.before ?? null, newText: presentation.after },
    ]
  }
  if (presentation?.kind === 'terminal') return [{ type: 'content', content: text(`$ ${presentation.command}`) }]
  return []
}

/** The `tool_call` that announces a call: title, kind, locations, and a diff when the tool has one. */
export function toolCallUpdate(call: ToolCallBlock, presentation: ToolPresentation | undefined): acp.SessionUpdate {
  const kind: acp.ToolKind =
    presentation?.kind === 'diff'
      ? 'edit'
      : presentation?.kind === 'terminal'
        ? 'execute'
        : (KIND_BY_NAME[call.name] ?? 'other')
  const content = callContent(presentation)
  const locations = presentation?.locations ?? (presentation?.kind === 'diff' ? [{ path: presentation.path }] : [])
  return {
    sessionUpdate: 'tool_call',
    toolCallId: call.id,
    title: presentation?.title ?? call.name,
    kind,
    status: 'pending',
    rawInput: call.arguments,
    ...(content.length ? { content } : {}),
    ...(locations.length ? { locations } : {}),
  }
}

/** The `tool_call_update` that closes a call with its result text. */
export function toolResultUpdate(message: ToolResultMessage, presentation?: ToolPresentation): acp.SessionUpdate {
  const output = message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')
  const content: acp.ToolCallContent[] = []
  if (presentation?.kind === 'terminal') {
    content.push({ type: 'content', content: text(`$ ${presentation.command}\n${output}`) })
  } else if (output) {
    content.push({ type: 'content', content: text(output) })
  }
  return {
    sessionUpdate: 'tool_call_update',
    toolCallId: message.toolCallId,
    status: message.isError ? 'failed' : 'completed',
    content,
    rawOutput: { isError: message.isError, output },
  }
}

const PLAN_STATUS: Record<string, acp.PlanEntryStatus> = {
  pending: 'pending',
  todo: 'pending',
  in_progress: 'in_progress',
  'in-progress': 'in_progress',
  active: 'in_progress',
  completed: 'completed',
  done: 'completed',
}

/**
 * A `plan` from a `todo/write` event (`{ todos: [{ content, status, priority? }] }`, the durable event of
 * the `todo_write` tool of @dsh/interaction/work-state), or undefined when it carries no list.
 */
export function planUpdate(data: unknown): acp.SessionUpdate | undefined {
  const list = (data as { todos?: unknown } | null)?.todos
  if (!Array.isArray(list)) return undefined
  const entries: acp.PlanEntry[] = []
  for (const item of list) {
    if (typeof item !== 'object' || item === null) continue
    const record = item as Record<string, unknown>
    if (typeof record.content !== 'string') continue
    const priority = record.priority
    entries.push({
      content: record.content,
      status: PLAN_STATUS[String(record.status)] ?? 'pending',
      priority: priority === 'high' || priority === 'low' ? priority : 'medium',
    })
  }
  return { sessionUpdate: 'plan', entries }
}

/**
 * The updates a live committed event produces (streamed deltas, tool calls, results, plans).
 * `presentations` remembers each announced call's presentation for its result.
 */
export function liveUpdates(
  event: SessionEvent,
  presentationOf: PresentationOf,
  presentations: Map<string, ToolPresentation | undefined>,
): acp.SessionUpdate[] {
  switch (event.type) {
    case 'assistant/chunk': {
      const chunk = event.data.chunk
      if (chunk.type === 'text-delta' && chunk.text)
        return [{ sessionUpdate: 'agent_message_chunk', content: text(chunk.text) }]
      if (chunk.type === 'reasoning-delta' && chunk.text) {
        return [{ sessionUpdate: 'agent_thought_chunk', content: text(chunk.text) }]
      }
      return []
    }
    case 'tool/call': {
      const call = event.data.call
      const presentation = presentationOf(call)
      presentations.set(call.id, presentation)
      return [toolCallUpdate(call, presentation)]
    }
    case 'tool/result': {
      const message = event.data.message
      const presentation = presentations.get(message.toolCallId)
      presentations.delete(message.toolCallId)
      return [toolResultUpdate(message, presentation)]
    }
    case 'todo/write': {
      const plan = planUpdate(event.data)
      return plan ? [plan] : []
    }
    case 'approval/decided': {
      const data = event.data
      if (data.toolCallId && data.decision === 'allowed-once') {
        return [{ sessionUpdate: 'tool_call_update', toolCallId: data.toolCallId, status: 'in_progress' }]
      }
      return []
    }
    default:
      return []
  }
}

/**
 * The updates that replay a session on `session/load`: its transcript (append-origin user, assistant
 * and tool messages) and its plans (`todo/write`), in log order.
 */
export function replayUpdates(events: readonly SessionEvent[], presentationOf: PresentationOf): acp.SessionUpdate[] {
  const updates: acp.SessionUpdate[] = []
  const presentations = new Map<string, ToolPresentation | undefined>()
  for (const event of events) {
    if (event.surfaceOp && event.surfaceOp.op !== 'append') continue
    if (event.type === 'user/message') {
      const data = event.data
      if (data.origin === 'context') continue
      for (const block of data.message.content) {
        if (block.type === 'text') updates.push({ sessionUpdate: 'user_message_chunk', content: text(block.text) })
      }
    } else if (event.type === 'assistant/message') {
      for (const block of event.data.message.content) {
        if (block.type === 'reasoning' && block.text) {
          updates.push({ sessionUpdate: 'agent_thought_chunk', content: text(block.text) })
        } else if (block.type === 'text' && block.text) {
          updates.push({ sessionUpdate: 'agent_message_chunk', content: text(block.text) })
        } else if (block.type === 'tool-call') {
          const presentation = presentationOf(block)
          presentations.set(block.id, presentation)
          updates.push(toolCallUpdate(block, presentation))
        }
      }
    } else if (event.type === 'tool/result') {
      const message = event.data.message
      updates.push(toolResultUpdate(message, presentations.get(message.toolCallId)))
    } else if (event.type === 'todo/write') {
      const plan = planUpdate(event.data)
      if (plan) updates.push(plan)
    }
  }
  return updates
}
