// The pending approval and question of the session host as every wire sends them (the RPC
// notifications and the web host-stream frames carry these same objects).
import type { ApprovalQuestion } from '@dsh/agent/approval'
import type { AskedQuestion } from '@dsh/interaction'
import { toJsonSafe } from '@dsh/kernel'
import type { Pending } from '../host/index.js'
import type { PendingApproval, PendingQuestion } from './types.js'

export function pendingApproval({ question }: Pending<ApprovalQuestion>): PendingApproval {
  const { requestId, policy: _policy, askedAt: _at, ...rest } = question
  return { requestId, ...(toJsonSafe(rest) as Omit<PendingApproval, 'requestId'>) }
}

export function pendingQuestion({ question }: Pending<AskedQuestion>): PendingQuestion {
  return {
    questionId: question.id,
    question: question.question,
    ...(question.options ? { options: [...question.options] } : {}),
    ...(question.sessionId ? { sessionId: question.sessionId } : {}),
    ...(question.agentId ? { agentId: question.agentId } : {}),
    ...(question.toolCallId ? { toolCallId: question.toolCallId } : {}),
  }
}
