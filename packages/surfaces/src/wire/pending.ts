// The pending approval and question of the session host as every wire sends them (the RPC
// notifications and the web host-stream frames carry these same objects).
import type { ApprovalQuestion } from '@dsh/agent/approval'
import type { AskedQuestion } from '@dsh/interaction'
import { toJsonSafe } from '@dsh/kernel'
import type { Pending, SessionHostListeners } from '../host/index.js'
import type { RpcNotifications } from '../rpc/protocol.js'
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

type PendingMethod = 'approval/requested' | 'approval/settled' | 'question/requested' | 'question/settled'

/** The host listeners that send its pending approvals and questions as JSON-RPC notifications. */
export function pendingNotifications(
  notify: <M extends PendingMethod>(method: M, params: RpcNotifications[M]) => void,
): Required<
  Pick<SessionHostListeners, 'approvalRequested' | 'approvalSettled' | 'questionRequested' | 'questionSettled'>
> {
  return {
    approvalRequested: (pending) => notify('approval/requested', pendingApproval(pending)),
    approvalSettled: (requestId, answer) => notify('approval/settled', { requestId, decision: answer.decision }),
    questionRequested: (pending) => notify('question/requested', pendingQuestion(pending)),
    questionSettled: (questionId, answer) => notify('question/settled', { questionId, status: answer.status }),
  }
}
