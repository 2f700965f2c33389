// @dsh/context/pruning: model-free tool-result pruning. Before each request (`agent/request`), every
// tool result on the surface whose text is longer than `maxChars` is replaced, on the surface only,
// by a head+tail node: a new `tool/result` with `replace { start: i, end: i }` citing the raw result.
// The raw result stays in the log and in the user transcript.
import type { RequestDraft } from '@dsh/agent'
import { type Context, HarnessError } from '@dsh/kernel'
import type { ToolResultContent, ToolResultMessage } from '@dsh/llm'
import type { Session } from '@dsh/session'
import { headTail, surfaceNodes } from './surface.js'

export const name = 'context-pruning'
export const inject = ['sessions']

export interface PruningConfig {
  /** Tool results whose text is longer than this (characters) are pruned. Default 12000. */
  maxChars?: number
  /** Characters kept: half from the head, half from the tail. Default 4000. */
  keepChars?: number
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
  if (!Number.isInteger(maxChars) || maxChars <= 0 || !Number.isInteger(keepChars) || keepChars <= 0) {
    throw new HarnessError(
      'INVALID_CONTEXT_CONFIG',
      'context-pruning: maxChars and keepChars must be positive integers',
      {
        maxChars: String(maxChars),
        keepChars: String(keepChars),
      },
    )
  }
  if (keepChars >= maxChars) {
    throw new HarnessError('INVALID_CONTEXT_CONFIG', 'context-pruning: keepChars must be smaller than maxChars', {
      maxChars,
      keepChars,
    })
  }
  return { maxChars, keepChars }
}

/**
 * Prunes every oversized append-origin tool result on the surface of `session`. Returns what it
 * replaced (nothing when every result is small or already pruned). Never touches the raw events.
 */
export function pruneToolResults(session: Session, config: PruningConfig = {}): PrunedResult[] {
  const { maxChars, keepChars } = resolve(config)
  const pruned: PrunedResult[] = []
  for (const node of surfaceNodes(session)) {
    if (node.event.type !== 'tool/result' || node.event.surfaceOp?.op !== 'append') continue
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
    const code = (node.event.data as { code?: string }).code
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
    pruneToolResults(draft.session, resolved)
    return next()
  })
}

export default { name, inject, apply }
