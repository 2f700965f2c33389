// One run's ACP `session/update` stream folded into progress the parent's log can hold: text and
// thought chunks are joined into one entry per uninterrupted piece, a tool call is logged when it
// appears and again when its status changes. The run's report is its last piece of message text.
import type * as acp from '@agentclientprotocol/sdk'
import type { SubagentProgress } from '../subagents/index.js'

type ToolStatus = Extract<SubagentProgress, { kind: 'tool' }>['status']

export class RunProgress {
  private piece: { kind: 'message' | 'thought'; text: string } | undefined
  private readonly tools = new Map<string, { title: string; status: ToolStatus; toolKind?: string }>()
  private last = ''

  constructor(private readonly report: (update: SubagentProgress) => void) {}

  update(update: acp.SessionUpdate): void {
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
      case 'agent_thought_chunk': {
        if (update.content.type !== 'text') return
        const kind = update.sessionUpdate === 'agent_message_chunk' ? 'message' : 'thought'
        if (this.piece?.kind !== kind) this.flush()
        this.piece ??= { kind, text: '' }
        this.piece.text += update.content.text
        return
      }
      case 'tool_call':
      case 'tool_call_update': {
        const known = this.tools.get(update.toolCallId)
        const next = {
          title: update.title ?? known?.title ?? update.toolCallId,
          status: update.status ?? known?.status ?? 'pending',
          ...((update.kind ?? known?.toolKind) ? { toolKind: (update.kind ?? known?.toolKind) as string } : {}),
        }
        this.tools.set(update.toolCallId, next)
        // Content and location updates of a call are the child's business; its state changes are progress.
        if (known && known.status === next.status) return
        this.flush()
        this.report({ kind: 'tool', toolCallId: update.toolCallId, ...next })
        return
      }
      default:
        return
    }
  }

  /** Ends the run: logs the open piece and returns the run's final text. */
  finish(): string {
    this.flush()
    return this.last
  }

  private flush(): void {
    const piece = this.piece
    this.piece = undefined
    if (!piece?.text.trim()) return
    if (piece.kind === 'message') this.last = piece.text
    this.report(piece)
  }
}
