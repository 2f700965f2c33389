// The parent's `subagent/*` events folded onto the tool card of the call that started each child
// (`subagent/started.callId`): which child session it runs, what a remote child reported doing
// (`subagent/progress`, decision 301) and how each run ended. Pure folding, no rendering.
import type {} from '@dsh/orchestration/subagents'
import { foldEvent, type SessionProjection, type ToolNode } from './projection'

/** One line of a remote child's progress (a tool call keeps one line, updated in place). */
export interface ProgressLine {
  kind: 'message' | 'thought' | 'tool'
  text: string
  /** Tool calls: the child's call id and its last status. */
  toolCallId?: string
  status?: string
}

/** What the card of a `task` call knows about its child. */
export interface SubagentView {
  subagentId: string
  childSession: string
  provider: string
  description?: string
  progress: ProgressLine[]
  /** The last finished run: its outcome and report. */
  outcome?: string
  report?: string
}

/** A card shows at most this many progress lines (the newest); a long child logs tens, not thousands. */
export const MAX_PROGRESS = 200

/** The child each subagent id belongs to, per projection (progress and finish events name only the id). */
const byId = new WeakMap<SessionProjection, Map<string, ToolNode>>()

export function subagentOf(node: ToolNode): SubagentView | undefined {
  return node.subagent as SubagentView | undefined
}

function nodeOf(p: SessionProjection, subagentId: string): ToolNode | undefined {
  return byId.get(p)?.get(subagentId)
}

foldEvent('subagent/started', (p, event) => {
  const data = event.data
  const node = data.callId ? p.toolNodes.get(data.callId) : undefined
  if (!node) return
  const view: SubagentView = {
    subagentId: data.subagentId,
    childSession: data.childSession,
    provider: data.provider,
    ...(data.description ? { description: data.description } : {}),
    progress: [],
  }
  node.subagent = view
  const nodes = byId.get(p) ?? new Map<string, ToolNode>()
  byId.set(p, nodes)
  nodes.set(data.subagentId, node)
  p.touch(node)
})

foldEvent('subagent/progress', (p, event) => {
  const node = nodeOf(p, event.data.subagentId)
  const view = node && subagentOf(node)
  if (!node || !view) return
  const data = event.data
  if (data.kind === 'tool') {
    const known = view.progress.find((line) => line.kind === 'tool' && line.toolCallId === data.toolCallId)
    if (known) {
      known.status = data.status
      known.text = data.title
    } else view.progress.push({ kind: 'tool', text: data.title, toolCallId: data.toolCallId, status: data.status })
  } else view.progress.push({ kind: data.kind, text: data.text })
  if (view.progress.length > MAX_PROGRESS) view.progress.splice(0, view.progress.length - MAX_PROGRESS)
  p.touch(node)
})

foldEvent('subagent/finished', (p, event) => {
  const node = nodeOf(p, event.data.subagentId)
  const view = node && subagentOf(node)
  if (!node || !view) return
  view.outcome = event.data.outcome
  view.report = event.data.text
  p.touch(node)
})

foldEvent('subagent/reopened', (p, event) => {
  const node = nodeOf(p, event.data.subagentId)
  const view = node && subagentOf(node)
  if (!node || !view) return
  view.childSession = event.data.childSession
  p.touch(node)
})
