// A plugin that answers every approval question the same way. Headless runs use it with
// `unavailable` (nobody can approve: fail closed), or `allowed-once` when the user passed `--yes`.
import { type Context, HarnessError } from '@dsh/kernel'
import { type ApprovalDecision, createStaticAnswerer } from './index.js'

export interface StaticAnswererConfig {
  /** Default `unavailable`. */
  decision?: ApprovalDecision
  /** Shown to the model when the decision is not `allowed-once`. */
  reason?: string
}

const DECISIONS: readonly ApprovalDecision[] = ['allowed-once', 'rejected', 'cancelled', 'unavailable']

export const name = 'approval-static-answerer'
export const inject = ['approval']

/** Throws `INVALID_APPROVAL_DECISION` at load for a decision that is not one of the four. */
export function apply(ctx: Context, config: StaticAnswererConfig = {}): void {
  const decision = config?.decision ?? 'unavailable'
  if (!DECISIONS.includes(decision)) {
    throw new HarnessError(
      'INVALID_APPROVAL_DECISION',
      `static answerer: unknown decision ${JSON.stringify(decision)}`,
      {
        decision: String(decision),
      },
    )
  }
  ctx.approval.answer(createStaticAnswerer(decision, config?.reason))
}

export default { name, inject, apply }
