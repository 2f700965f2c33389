// Two branches of a conversation side by side (issue 37, what-if): a fork and the session it was
// forked from, each from the fork point on (the fork's seed is the parent's), folded from their logs:
// requests, tokens, cost, tool calls, files changed (the turn-end checkpoints), the final answer.
import type {} from '@dsh/interaction/rewind'
import { type AnySessionEvent, isEvent, sessionUsage, type UnknownSessionEvent, usageCostText } from '@dsh/session'

type Event = AnySessionEvent | UnknownSessionEvent

export interface BranchSummary {
  sessionId: string
  requests: number
  tokens: { input: number; output: number }
  cost: string
  toolCalls: string[]
  filesChanged: string[]
  answer: string
}

/** What a branch did from `fromSeq` on, from its log. */
export function summarizeBranch(sessionId: string, events: readonly Event[], fromSeq: number): BranchSummary {
  const usage = sessionUsage(events as AnySessionEvent[], fromSeq)
  const toolCalls: string[] = []
  const files = new Set<string>()
  let answer = ''
  for (const event of events) {
    if (event.seq < fromSeq) continue
    if (isEvent(event, 'tool/call')) toolCalls.push(event.data.call.name)
    else if (isEvent(event, 'checkpoint/taken') && event.data.at === 'turn-end')
      for (const change of event.data.changes ?? []) files.add(change.path)
    else if (isEvent(event, 'assistant/message')) {
      const text = event.data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')
      if (text.trim()) answer = text.trim()
    }
  }
  return {
    sessionId,
    requests:
      usage.models.reduce((sum, row) => sum + row.requests, 0) ||
      events.filter((e) => e.seq >= fromSeq && e.type === 'request/header').length,
    tokens: {
      input: usage.models.reduce((sum, row) => sum + row.inputTokens, 0),
      output: usage.models.reduce((sum, row) => sum + row.outputTokens, 0),
    },
    cost: usageCostText(usage),
    toolCalls,
    filesChanged: [...files].sort(),
    answer,
  }
}
