// @dsh/context/pruning: model-free tool-result pruning. Before each request (`agent/request`), tool
// results on the surface whose text is longer than `maxChars` are replaced, on the surface only, by a
// head+tail node: a new `tool/result` with `replace { start: i, end: i }` citing the raw result. The
// raw result stays in the log and in the user transcript. A result the model has not answered yet is
// sent whole, unless the request would then take `freshLimit` of the context window or more.
import type { RequestDraft } from '@dsh/agent'
import { type Context, HarnessError } from '@dsh/kernel'
import type { ToolResultContent, ToolResultMessage } from '@dsh/llm'
import type { Session } from '@dsh/session'
import type {} from './index.js'
import { headTail, surfaceNodes } from './surface.js'

export const name = 'context-pruning'
export const inject = ['sessions']

export interface PruningConfig {
  /** Tool results whose text is longer than this (characters) are pruned. Default 12000. */
  maxChars?: number
  /** Characters kept: half from the head, half from the tail. Default 4000. */
  keepChars?: number
  /**
   * Share of the context window from which results the model has not seen yet are pruned too
   * (needs the token-meter row; without it, unseen results are always sent whole). Default 0.7.
   */
  freshLimit?: number
}

export interface PruneOptions {
  /** Also prune results no assistant message has followed yet. Default true. */
  includeFresh?: boolean
}

/** One pruned result. */
export interface PrunedResult {
  /** The raw `tool/result` event. */
  sourceSeq: number
  /** The replacement event. */
  seq: number
  originalChars: number
}

function resolve(config: PruningConfig = {}): Required<PruningConfig> {
  const maxChars = config?.maxChars ?? 12_000
  const keepChars = config?.keepChars ?? 4_000
  const freshLimit = config?.freshLimit ?? 0.7
  const problems: string[] = []
  if (!Number.isInteger(maxChars) || maxChars <= 0) problems.push('maxChars must be a positive integer')
  if (!Number.isInteger(keepChars) || keepChars <= 0) problems.push('keepChars must be a positive integer')
  else if (keepChars >= maxChars) problems.push('keepChars must be smaller than maxChars')
  if (typeof freshLimit !== 'number' || !(freshLimit > 0)) problems.push('freshLimit must be a positive number')
  if (problems.length > 0) {
    throw new HarnessError('INVALID_CONTEXT_CONFIG', `context-pruning: ${problems.join('; ')}`, { problems })
  }
  return { maxChars, keepChars, freshLimit }
}

/**
 * Prunes the oversized append-origin tool results on the surface of `session` (with `includeFresh:
 * false`, only those an assistant message has followed). Returns what it replaced; nothing when every
 * result is small or already pruned. Never touches the raw events.
 */
export function pruneToolResults(
  session: Session,
  config: PruningConfig = {},
  options: PruneOptions = {},
): PrunedResult[] {
  const { maxChars, keepChars } = resolve(config)
  const nodes = surfaceNodes(session)
  const lastAssistant = nodes.findLastIndex((node) => node.message.role === 'assistant')
  const pruned: PrunedResult[] = []
  for (const node of nodes) {
    if (node.event.type !== 'tool/result' || node.event.surfaceOp?.op !== 'append') continue
    if (options.includeFresh === false && node.index > lastAssistant) continue
    const message = node.message as ToolResultMessage
    const text = message.content
      .filter((block) => block.type === 'text')
      .map((block) => block.text)
      .join('\n')
    if (text.length <= maxChars) continue
    const cut = headTail(
      text,
      keepChars,
      (left) =>
        `[... ${left} of ${text.length} characters of this tool result were pruned from the model context; the full result is in the session log (event ${node.seq}). Run the tool again with a narrower range if the middle matters ...]`,
    )
    const content: ToolResultContent[] = [
      { type: 'text', text: cut },
      ...message.content.filter((block) => block.type !== 'text'),
    ]
    const code = node.event.type === 'tool/result' ? node.event.data.code : undefined
    const replacement: ToolResultMessage = { ...message, content }
    const event = session.append('tool/result', code ? { message: replacement, code } : { message: replacement }, {
      surfaceOp: { op: 'replace', start: node.index, end: node.index },
      sourceEventSeqs: [node.seq],
    })
    pruned.push({ sourceSeq: node.seq, seq: event.seq, originalChars: text.length })
  }
  return pruned
}

export function apply(ctx: Context, config: PruningConfig = {}): void {
  const resolved = resolve(config)
  ctx.on('agent/request', async (draft: RequestDraft, next: () => Promise<RequestDraft>) => {
    const session = draft.session
    pruneToolResults(session, resolved, { includeFresh: false })
    const meter = ctx.get('tokenMeter')
    if (meter) {
      const { provider, model } = draft.config
      const window = meter.measure(session, { provider, model }).window
      const tokens = meter.estimate({ system: draft.system, tools: draft.tools, messages: session.deriveMessages() })
      if (window && tokens >= window * resolved.freshLimit) pruneToolResults(session, resolved)
    }
    return next()
  })
}

export default { name, inject, apply }
