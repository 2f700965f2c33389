// The tool call a `session/request_permission` shows: what would run, what it would be granted
// (a sandbox escalation names the mode it leaves and the one it gets) and why the model or the policy
// asks. The editor merges this update into the announced call, so the call's diff or command is
// carried along rather than replaced by the explanation.
import type * as acp from '@agentclientprotocol/sdk'
import type { ApprovalQuestion } from '@dsh/agent/approval'
import type { ToolPresentation } from '@dsh/agent/tools'
import { callContent } from './updates.js'

/** A sandbox escalation's grant, when the question is one (`@dsh/world/sandbox` asks with these details). */
function grantOf(question: ApprovalQuestion): { from: string; to: string } | undefined {
  if (question.kind !== 'escalation') return undefined
  const details = question.details
  if (typeof details !== 'object' || details === null || Array.isArray(details)) return undefined
  const { from, to } = details
  return typeof from === 'string' && typeof to === 'string' ? { from, to } : undefined
}

/** The explanation under the title: the grant and the reason, each when known. */
function explanation(question: ApprovalQuestion, grant: { from: string; to: string } | undefined): string {
  const lines: string[] = []
  if (grant) lines.push(`Grants ${grant.to} for this one call (the session's sandbox is ${grant.from}).`)
  if (question.reason?.trim()) lines.push(`Reason: ${question.reason.trim()}`)
  return lines.join('\n')
}

/** The `toolCall` of a permission request for `question`; `announced` is the call's editor presentation. */
export function permissionToolCall(
  question: ApprovalQuestion,
  announced: ToolPresentation | undefined,
): acp.ToolCallUpdate {
  const grant = grantOf(question)
  const text = explanation(question, grant)
  const content = text ? [...callContent(announced), { type: 'content', content: { type: 'text', text } } as const] : []
  return {
    toolCallId: question.toolCallId ?? question.requestId,
    title: grant ? `${question.summary} (${grant.from} -> ${grant.to})` : question.summary,
    status: 'pending',
    ...(content.length ? { content } : {}),
  }
}
