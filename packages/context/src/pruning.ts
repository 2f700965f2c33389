// @dsh/context/pruning: model-free tool-result pruning. Before each request (`agent/request`), tool
// results on the surface whose text is longer than `maxChars` are replaced, on the surface only, by a
// head+tail node: a new `tool/result` with `replace { start: i, end: i }` citing the raw result. The
// raw result stays in the log and in the user transcript. A result the model has not answered yet is
// sent whole, unless the request would then take `freshLimit` of the context window or more.
import type { RequestDraft } from '@dsh/agent'
import { type Context, directService, HarnessError } from '@dsh/kernel'
import type { ToolResultContent, ToolResultMessage } from '@dsh/llm'
import type { AnySessionEvent, Session } from '@dsh/session'
import type {} from './index.js'
import { headTail } from './surface.js'

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
  /** Surface position to start from: the nodes before it are known to need nothing. Default 0. */
  from?: number
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
  return prune(session, resolve(config), options).pruned
}

/** Prunes from `options.from`; also says up to where the surface is settled (nothing left to prune). */
function prune(
  session: Session,
  { maxChars, keepChars }: Required<PruningConfig>,
  options: PruneOptions,
): { pruned: PrunedResult[]; settled: number } {
  const surface = session.surface()
  const events = session.events
  let end = surface.length
  if (options.includeFresh === false) {
    // Results after the last assistant message are fresh: the model has not answered them yet.
    while (end > 0 && (events[surface[end - 1] as number] as AnySessionEvent).type !== 'assistant/message') end--
  }
  const pruned: PrunedResult[] = []
  for (let index = options.from ?? 0; index < end; index++) {
    const seq = surface[index] as number
    const event = events[seq] as AnySessionEvent
    if (event.type !== 'tool/result' || event.surfaceOp?.op !== 'append') continue
    const message = event.data.message
    if (textLength(message) <= maxChars) continue
    const text = message.content
      .filter((block) => block.type === 'text')
      .map((block) => block.text)
      .join('\n')
    const cut = headTail(
      text,
      keepChars,
      (left) =>
        `[... ${left} of ${text.length} characters of this tool result were pruned from the model context; the full result is in the session log (event ${seq}). Run the tool again with a narrower range if the middle matters ...]`,
    )
    const content: ToolResultContent[] = [
      { type: 'text', text: cut },
      ...message.content.filter((block) => block.type !== 'text'),
    ]
    const code = event.data.code
    const replacement: ToolResultMessage = { ...message, content }
    const replaced = session.append('tool/result', code ? { message: replacement, code } : { message: replacement }, {
      surfaceOp: { op: 'replace', start: index, end: index },
      sourceEventSeqs: [seq],
    })
    pruned.push({ sourceSeq: seq, seq: replaced.seq, originalChars: text.length })
  }
  return { pruned, settled: end }
}

/** Characters of the text blocks joined by newlines, without joining them. */
function textLength(message: ToolResultMessage): number {
  let length = -1
  for (const block of message.content) if (block.type === 'text') length += block.text.length + 1
  return Math.max(0, length)
}

export function apply(ctx: Context, config: PruningConfig = {}): void {
  const resolved = resolve(config)
  // Per session: the surface generation this row last left it at, and the prefix it already settled.
  // A single-node replacement keeps every position, so pruning's own replacements keep the prefix;
  // anyone else's replacement (compaction) moves the generation and the next request scans again.
  const settled = new WeakMap<Session, { generation: number; upTo: number }>()
  // Asked before every request: the provider's own object, not Cordis's per-call proxies (decision 351).
  const tokenMeter = directService(ctx, 'tokenMeter')
  ctx.on('agent/request', async (draft: RequestDraft, next: () => Promise<RequestDraft>) => {
    const session = draft.session
    const known = settled.get(session)
    const from = known && known.generation === session.generation ? known.upTo : 0
    const pass = prune(session, resolved, { includeFresh: false, from })
    settled.set(session, { generation: session.generation, upTo: pass.settled })
    const meter = tokenMeter()
    if (meter) {
      const { provider, model } = draft.config
      const window = meter.measure(session, { provider, model }).window
      const tokens = meter.estimateNext(session, { system: draft.system, tools: draft.tools })
      if (window && tokens >= window * resolved.freshLimit) {
        prune(session, resolved, { from })
        settled.set(session, { generation: session.generation, upTo: pass.settled })
      }
    }
    return next()
  })
}

export default { name, inject, apply }
