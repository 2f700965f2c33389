// The model surface as pruning and compaction see it: nodes with their positions and events, the
// positions where the surface may be cut without separating a tool call from its result, and a
// bounded plain-text rendering of a range for the summariser.
import type { Message } from '@dsh/llm'
import type { Session, SurfaceEvent } from '@dsh/session'

/** One node of the current model surface. */
export interface SurfaceNode {
  /** Position on the surface (what `replace { start, end }` counts). */
  index: number
  seq: number
  event: SurfaceEvent
  message: Message
}

/** The current surface of `session`, in order. */
export function surfaceNodes(session: Session): SurfaceNode[] {
  const events = session.events
  return session.surface().map((seq, index) => {
    // The surface holds only model-visible events (the log checks it on append and load).
    const event = events[seq] as SurfaceEvent
    return { index, seq, event, message: event.data.message }
  })
}

/**
 * Positions `c` (1..n-1) where the surface may be cut into a closed prefix `[0, c-1]` and a kept
 * tail `[c, n-1]`: every tool call in the prefix has its result in the prefix, and node `c` is not a
 * tool result. Ascending.
 */
export function safeCuts(nodes: readonly SurfaceNode[]): number[] {
  const open = new Set<string>()
  const cuts: number[] = []
  for (const [index, node] of nodes.entries()) {
    if (index > 0 && open.size === 0 && node.message.role !== 'tool') cuts.push(index)
    if (node.message.role === 'assistant') {
      for (const block of node.message.content) if (block.type === 'tool-call') open.add(block.id)
    } else if (node.message.role === 'tool') open.delete(node.message.toolCallId)
  }
  return cuts
}

/** The readable text of a message: text and tool calls; reasoning is left out. */
export function nodeText(message: Message): string {
  const parts: string[] = []
  for (const block of message.content) {
    if (block.type === 'text') parts.push(block.text)
    else if (block.type === 'tool-call') parts.push(`[call ${block.name} ${JSON.stringify(block.arguments)}]`)
    else if (block.type === 'image') parts.push(`[image ${block.mimeType}]`)
  }
  return parts.join('\n')
}

/** Cuts `text` to at most about `max` characters: head, a marker naming what was left out, tail. */
export function headTail(text: string, max: number, marker = (left: number) => `[... ${left} characters ...]`): string {
  if (text.length <= max) return text
  const half = Math.max(1, Math.floor(max / 2))
  const left = text.length - 2 * half
  return `${text.slice(0, half)}\n${marker(left)}\n${text.slice(text.length - half)}`
}

/** The `origin` of a user message event (`context` for dynamic context, `compaction` for a summary). */
export function originOf(node: SurfaceNode): string | undefined {
  return node.event.type === 'user/message' ? node.event.data.origin : undefined
}

/**
 * Renders nodes as a plain transcript of at most about `budget` characters: every node keeps its
 * role line; an earlier summary may take up to half the budget; other long entries are cut head+tail
 * to a fair share of the rest.
 */
export function renderNodes(nodes: readonly SurfaceNode[], budget: number): string {
  const summaries = nodes.filter((node) => originOf(node) === 'compaction')
  const summaryCap = Math.floor(budget / 2 / Math.max(1, summaries.length))
  const summaryChars = summaries.reduce((sum, node) => sum + Math.min(summaryCap, nodeText(node.message).length), 0)
  const others = nodes.length - summaries.length
  const share = Math.max(200, Math.floor((budget - summaryChars) / Math.max(1, others)) - 40)
  return nodes
    .map((node) => {
      const message = node.message
      const origin = originOf(node)
      const label =
        message.role === 'tool'
          ? `tool result (${message.toolName}${message.isError ? ', error' : ''})`
          : origin === 'compaction'
            ? 'summary of what came before'
            : origin === 'context'
              ? 'context'
              : message.role
      const cap = origin === 'compaction' ? summaryCap : share
      return `### ${label} [event ${node.seq}]\n${headTail(nodeText(message), cap)}`
    })
    .join('\n\n')
}
