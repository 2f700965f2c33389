// The client's projection of one session: the committed events folded into conversation nodes.
// Folding is keyed by event type (`foldEvent`), so a plugin adds a node kind by registering a
// folder here and a renderer in `registry.ts`; nothing switches over all kinds in one place.
// Payload types come from the packages that declare the events (type-only imports, erased from the
// bundle); `@dsh/session/events` is the one runtime import, pure code with no Node dependency.
import type {} from '@dsh/agent/approval'
import type {} from '@dsh/context'
import { describeGiveUp, describeRetry } from '@dsh/context/recovery-text'
import type {} from '@dsh/interaction/model-choice'
import type {} from '@dsh/interaction/work-state'
import { isEvent, type SessionEvent, type SessionEventType } from '@dsh/session/events'
import type {
  AgentStatus,
  EventEnvelope,
  InboxView,
  JobView,
  SessionFrame,
  SessionHeaderView,
} from '@dsh/surfaces/wire'
import type {} from '@dsh/world/sandbox'

export interface Block {
  type: string
  text?: string
  ref?: string
  mimeType?: string
  id?: string
  name?: string
  arguments?: Record<string, unknown>
}

/** One node of the conversation. `rev` changes whenever the node does (renderers memoise on it). */
export interface ConversationNode {
  kind: string
  key: string
  seq: number
  rev: number
  [field: string]: unknown
}

export interface ToolNode extends ConversationNode {
  kind: 'tool'
  call: { id: string; name: string; arguments: Record<string, unknown> }
  result?: { text: string; isError: boolean; code?: string; synthetic?: boolean }
  /** `grant`: this answer allowed the tool's later calls of the same kind for the session. */
  decision?: { decision: string; by?: string; reason?: string; grant?: boolean; rule?: { text: string; scope: string } }
}

/** How events of type `T` change the nodes; `event.data` is that type's declared payload. */
export type Folder<T extends SessionEventType> = (projection: SessionProjection, event: SessionEvent<T>) => void

/** Event type -> how it changes the nodes. Types without a folder leave the nodes alone. */
export const eventFolders = new Map<string, (projection: SessionProjection, event: EventEnvelope) => void>()

/**
 * Event types a client module renders (`registerEventRenderer`): without a folder of their own, each
 * such event becomes an `event` node where it happened. A type added later re-folds the open session.
 */
export const eventNodeTypes = new Set<string>()

/** Registers (or replaces) the folder of one event type. */
export function foldEvent<T extends SessionEventType>(type: T, folder: Folder<T>): void {
  eventFolders.set(type, (projection, event) => {
    if (isEvent(event, type)) folder(projection, event)
  })
}

export class SessionProjection {
  header: SessionHeaderView | undefined
  /** The next seq this projection lacks (the `since` of a reconnect). */
  nextSeq = 0
  readonly nodes: ConversationNode[] = []
  readonly toolNodes = new Map<string, ToolNode>()
  streaming: ConversationNode | undefined
  status: AgentStatus = 'detached'
  inbox: InboxView = { 'next-step': [], 'next-turn': [] }
  /** Permission mode (from the host's state, then from `sandbox/mode` events). */
  mode: string | undefined
  /** The agent preset (from the host's state, then from `preset/selected` events). */
  preset: string | undefined
  /** The last reported usage and the context window of the last request (the meter). */
  usage: { inputTokens: number; outputTokens: number; totalTokens: number } | undefined
  contextWindow: number | undefined
  /**
   * The session's cost, summed from the cost each response logged (the fork seed left out): `usd` of
   * the requests with a known price, `unknownRequests` without one.
   */
  cost = { usd: 0, requests: 0, unknownRequests: 0 }
  todos: Array<{ content: string; status: string }> = []
  jobs: JobView[] = []
  /** `provider:model` of the session's model choice (`model/selected`) or of the last request (`request/header`). */
  model: string | undefined
  version = 0
  error: string | undefined

  constructor(readonly sessionId: string) {}

  /** Applies one stream frame; returns whether anything changed. Duplicate events are ignored. */
  applyFrame(frame: SessionFrame): boolean {
    if (frame.type === 'session/baseline') {
      this.header = frame.header
      if (frame.since > this.nextSeq) {
        this.reset() // the host cannot fill the gap from here: start over from its baseline
      }
      for (const event of frame.events) this.apply(event)
      this.status = frame.status
      this.inbox = frame.inbox
      if (frame.mode) this.mode = frame.mode
      if (frame.preset) this.preset = frame.preset
      this.jobs = frame.jobs ?? []
      this.error = undefined
    } else if (frame.type === 'session/event') {
      if (!this.apply(frame.event)) return false
    } else if (frame.type === 'session/state') {
      this.status = frame.status
      this.inbox = frame.inbox
      if (frame.mode) this.mode = frame.mode
      if (frame.preset) this.preset = frame.preset
      this.jobs = frame.jobs ?? []
    } else if (frame.type === 'session/error') {
      this.error = `${frame.code}: ${frame.message}`
    }
    this.version += 1
    return true
  }

  /** The plugin event types this projection was folded with (a change means folding again from seq 0). */
  foldedTypes = ''

  reset(): void {
    this.nodes.length = 0
    this.toolNodes.clear()
    this.streaming = undefined
    this.nextSeq = 0
    this.cost = { usd: 0, requests: 0, unknownRequests: 0 }
  }

  /** Folds one committed event, exactly once (by seq). */
  apply(event: EventEnvelope): boolean {
    if (event.seq < this.nextSeq) return false
    this.nextSeq = event.seq + 1
    const folder = eventFolders.get(event.type)
    if (folder) folder(this, event)
    else if (eventNodeTypes.has(event.type)) this.push({ kind: 'event', key: `v${event.seq}`, seq: event.seq, event })
    return true
  }

  push(node: Omit<ConversationNode, 'rev'>): ConversationNode {
    const full = { ...node, rev: 0 } as ConversationNode
    this.nodes.push(full)
    return full
  }

  touch(node: ConversationNode): void {
    node.rev += 1
  }
}

// ---- the built-in folders ----

const textOf = (content: readonly Block[]) =>
  content
    .map((block) => (block.type === 'text' ? (block.text ?? '') : block.type === 'image' ? '[image]' : ''))
    .join('')

foldEvent('user/message', (p, event) => {
  const data = event.data
  const text = textOf(data.message.content)
  // Input the harness added (sandbox notes, continuations) is context, not something the person typed.
  if (data.origin) p.push({ kind: 'context', key: `u${event.seq}`, seq: event.seq, text, origin: data.origin })
  else {
    // What the person typed is the first text block; attachments and `@` references follow it.
    const [first, ...rest] = data.message.content as readonly Block[]
    const images = rest.flatMap((block) =>
      block.type === 'image' ? [{ ref: block.ref, mimeType: block.mimeType }] : [],
    )
    // One entry per attached file, directory or session block (each shown as a chip).
    const attached = rest.flatMap((block) =>
      block.type === 'text' && block.text && !block.text.startsWith('[attached image') ? [block.text] : [],
    )
    p.push({
      kind: 'user',
      key: `u${event.seq}`,
      seq: event.seq,
      text: first?.type === 'text' ? (first.text ?? '') : text,
      images,
      attached,
    })
  }
})

foldEvent('assistant/chunk', (p, event) => {
  const chunk = event.data.chunk
  if (chunk.type !== 'text-delta' && chunk.type !== 'reasoning-delta') return
  if (!p.streaming)
    p.streaming = p.push({ kind: 'streaming', key: `s${event.seq}`, seq: event.seq, text: '', reasoning: '' })
  const node = p.streaming
  if (chunk.type === 'text-delta') node.text = `${node.text as string}${chunk.text}`
  else node.reasoning = `${node.reasoning as string}${chunk.text}`
  p.touch(node)
})

foldEvent('assistant/message', (p, event) => {
  const message = event.data.message
  if (message.usage) p.usage = message.usage
  if (message.usage && event.seq >= (p.header?.seedLength ?? 0)) {
    const usd = event.data.cost?.usd
    p.cost.requests++
    if (typeof usd === 'number') p.cost.usd = Math.round((p.cost.usd + usd) * 1e9) / 1e9
    else p.cost.unknownRequests++
  }
  if (p.streaming) {
    const index = p.nodes.indexOf(p.streaming)
    if (index >= 0) p.nodes.splice(index, 1)
    p.streaming = undefined
  }
  const reasoning = message.content
    .filter((block) => block.type === 'reasoning')
    .map((block) => block.text)
    .join('')
  const text = textOf(message.content)
  if (text || reasoning) p.push({ kind: 'assistant', key: `a${event.seq}`, seq: event.seq, text, reasoning })
  if (message.error) {
    p.push({
      kind: 'error',
      key: `e${event.seq}`,
      seq: event.seq,
      code: message.error.code,
      text: message.error.message,
    })
  }
})

foldEvent('tool/call', (p, event) => {
  const call = event.data.call
  const node = p.push({ kind: 'tool', key: `t${call.id}`, seq: event.seq, call }) as ToolNode
  p.toolNodes.set(call.id, node)
})

foldEvent('tool/result', (p, event) => {
  const data = event.data
  let node = p.toolNodes.get(data.message.toolCallId)
  if (!node) {
    // A closer for a call this projection never saw dispatched (e.g. not started before a crash).
    node = p.push({
      kind: 'tool',
      key: `t${data.message.toolCallId}`,
      seq: event.seq,
      call: { id: data.message.toolCallId, name: data.message.toolName, arguments: {} },
    }) as ToolNode
    p.toolNodes.set(data.message.toolCallId, node)
  }
  node.result = {
    text: textOf(data.message.content),
    isError: data.message.isError,
    ...(data.code ? { code: data.code } : {}),
    ...(data.synthetic ? { synthetic: true } : {}),
  }
  p.touch(node)
})

foldEvent('approval/decided', (p, event) => {
  const data = event.data
  const node = data.toolCallId ? p.toolNodes.get(data.toolCallId) : undefined
  if (!node) return
  node.decision = {
    decision: data.decision,
    ...(data.by ? { by: data.by } : {}),
    ...(data.reason ? { reason: data.reason } : {}),
    ...(data.grant ? { grant: true } : {}),
    ...(data.rule ? { rule: { text: data.rule.text, scope: data.rule.scope } } : {}),
  }
  p.touch(node)
})

/** What a person can do after a failed turn, by the model error's code. */
function nextStep(code: string): string {
  if (code === 'AUTH') return 'check the key on the Settings page, then send again'
  if (code === 'RATE_LIMIT') return 'wait a little, then send again'
  if (code === 'CONTEXT_OVERFLOW') return 'run /compact, then send again'
  return 'send a message to try again, or pick another model'
}

foldEvent('turn/end', (p, event) => {
  const data = event.data
  if (p.streaming) p.streaming = undefined
  // The model's error is already on the page just above: the turn's end says what to do next instead.
  const last = p.nodes.at(-1)
  const shown = data.reason === 'error' && last?.kind === 'error' && last.text === data.message
  p.push({
    kind: 'turn-end',
    key: `x${event.seq}`,
    seq: event.seq,
    reason: data.reason,
    text: shown ? '' : (data.message ?? ''),
    ...(data.reason === 'error' ? { next: nextStep(shown ? String(last?.code ?? '') : '') } : {}),
  })
})

foldEvent('compaction/end', (p, event) => {
  p.push({ kind: 'notice', key: `c${event.seq}`, seq: event.seq, text: 'Earlier context was compacted for the model.' })
})

foldEvent('recovery/retry', (p, event) => {
  p.push({ kind: 'notice', key: `r${event.seq}`, seq: event.seq, text: `Retrying: ${describeRetry(event.data)}` })
})

foldEvent('recovery/give-up', (p, event) => {
  p.push({ kind: 'notice', key: `g${event.seq}`, seq: event.seq, text: describeGiveUp(event.data) })
})

foldEvent('session/end-seed', (p, event) => {
  p.push({ kind: 'notice', key: `f${event.seq}`, seq: event.seq, text: `Forked from ${event.data.parentSession}` })
})

foldEvent('preset/selected', (p, event) => {
  p.preset = event.data.name
})

foldEvent('sandbox/mode', (p, event) => {
  p.mode = event.data.mode
})

foldEvent('request/context', (p, event) => {
  const window = event.data.contextWindow
  if (typeof window === 'number') p.contextWindow = window
})

foldEvent('todo/write', (p, event) => {
  p.todos = event.data.todos
})

// The session's model choice (`/model`, the picker): shown at once, and what the next request uses.
foldEvent('model/selected', (p, event) => {
  const choice = event.data
  p.model = choice.provider ? `${choice.provider}:${choice.model}` : choice.model
})

foldEvent('request/header', (p, event) => {
  const config = event.data.config
  if (config?.model) p.model = config.provider ? `${config.provider}:${config.model}` : config.model
})

/** `$0.42`, `unknown` (no request had a price), `$0.42 + unknown`; undefined before any request. */
export function costText(cost: SessionProjection['cost']): string | undefined {
  if (cost.requests === 0) return undefined
  if (cost.unknownRequests === cost.requests) return 'unknown'
  const usd = cost.usd
  const figure = usd === 0 ? '$0.00' : usd < 0.01 ? `$${Number(usd.toPrecision(2))}` : `$${usd.toFixed(2)}`
  return cost.unknownRequests > 0 ? `${figure} + unknown` : figure
}
