// @dsh/agent/guards/large-write: a write bigger than `maxBytes` needs a person's approval (`tools/pre-execute`
// ask), whatever the permission mode allowed. A denial from an earlier policy stays a denial; without
// an approver (headless without --yes) the call is not run and the model reads why.

import type { Context } from '@dsh/kernel'
import { HarnessError } from '@dsh/kernel'
import type { ToolCallInput, ToolPreExecuteDecision } from '../tools/index.js'

export const name = 'guard-large-write'
export const inject = ['tools']

export interface LargeWriteConfig {
  /** Writes larger than this many bytes (UTF-8) ask first. Default 262144 (256 KiB). */
  maxBytes?: number
  /** Which argument of which tool holds the written text. Default `{ write: 'content', edit: 'new_string' }`. */
  fields?: Record<string, string>
}

export function apply(ctx: Context, config: LargeWriteConfig = {}): void {
  const maxBytes = config?.maxBytes ?? 262_144
  if (!Number.isInteger(maxBytes) || maxBytes < 1) {
    throw new HarnessError('INVALID_GUARD_CONFIG', 'guard-large-write: maxBytes must be an integer >= 1', {
      maxBytes: String(maxBytes),
    })
  }
  const fields = config?.fields ?? { write: 'content', edit: 'new_string' }

  ctx.on('tools/pre-execute', async (call: ToolCallInput, next: () => Promise<ToolPreExecuteDecision>) => {
    const decision = await next()
    const field = fields[call.toolName]
    if (field === undefined || decision.action === 'deny') return decision
    const value = (decision.args ?? call.args)[field]
    const size = typeof value === 'string' ? Buffer.byteLength(value, 'utf8') : 0
    if (size <= maxBytes) return decision
    const path = typeof call.args.path === 'string' ? ` to ${call.args.path}` : ''
    return {
      action: 'ask',
      reason: `a large write${path}: ${size} bytes, over the ${maxBytes}-byte limit that needs approval`,
      ...(decision.args === undefined ? {} : { args: decision.args }),
      ...(decision.action === 'ask' && decision.summary !== undefined ? { summary: decision.summary } : {}),
    }
  })
}

export default { name, inject, apply }
