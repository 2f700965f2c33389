// What a session is doing, read from its log alone, for the views of every running agent (`dsh
// agents`): working on a turn, waiting for an approval, waiting for the user's answer or next message,
// or ended; its model, its cost so far and its last activity. The same fold for every surface.
import { type AnySessionEvent, sessionUsage, type TurnEndReason, usageCostText } from '@dsh/session'

/** `idle`: no turn open (a chat waits for its next message; a finished run is over). */
export type ActivityPhase = 'running' | 'approval' | 'question' | 'idle'

export interface SessionActivity {
  phase: ActivityPhase
  /** `provider:model` of the last request. */
  model?: string
  /** Milliseconds since the epoch of the last event. */
  lastActivity?: number
  /** How the last turn ended, when one did. */
  lastTurnEnd?: TurnEndReason
  /** The cost of its requests (the fork seed excluded), as people read it. */
  cost: string
  /** What it waits for, when it waits: the tool of the approval, or the question. */
  waitingOn?: string
}

export function sessionActivity(events: readonly AnySessionEvent[], seedLength = 0): SessionActivity {
  const approvals = new Map<string, string>()
  const questions = new Map<string, string>()
  let open = false
  let model: string | undefined
  let lastTurnEnd: TurnEndReason | undefined
  for (const event of events.slice(seedLength)) {
    const data = event.data as Record<string, unknown> & { config?: { provider?: string; model?: string } }
    switch (event.type) {
      case 'turn/start':
        open = true
        break
      case 'turn/end':
        open = false
        lastTurnEnd = (data as { reason: TurnEndReason }).reason
        approvals.clear()
        questions.clear()
        break
      case 'request/header':
        if (data.config?.model)
          model = data.config.provider ? `${data.config.provider}:${data.config.model}` : data.config.model
        break
      case 'approval/asked':
        approvals.set(String(data.requestId), String(data.toolName ?? data.summary ?? 'an action'))
        break
      case 'approval/decided':
        approvals.delete(String(data.requestId))
        break
      case 'tool/call': {
        const call = (data as { call: { id: string; name: string; arguments: Record<string, unknown> } }).call
        if (call.name === 'ask_user') questions.set(call.id, String(call.arguments?.question ?? 'a question'))
        break
      }
      case 'tool/result':
        questions.delete(String((data as { message: { toolCallId?: string } }).message.toolCallId))
        break
    }
  }
  const phase: ActivityPhase =
    approvals.size > 0 ? 'approval' : questions.size > 0 ? 'question' : open ? 'running' : 'idle'
  const waitingOn =
    phase === 'approval' ? [...approvals.values()][0] : phase === 'question' ? [...questions.values()][0] : undefined
  const last = events.at(-1)
  return {
    phase,
    ...(model ? { model } : {}),
    ...(last ? { lastActivity: last.time } : {}),
    ...(lastTurnEnd ? { lastTurnEnd } : {}),
    cost: usageCostText(sessionUsage(events, seedLength)),
    ...(waitingOn ? { waitingOn } : {}),
  }
}
