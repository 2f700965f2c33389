// What a session is doing, read from its log alone, for the views of every running agent (`dsh
// agents`): working on a turn, waiting for an approval, waiting for the user's answer or next message,
// or ended; its model, its cost so far and its last activity. The same fold for every surface.
import type {} from '@dsh/agent/approval'
import { type AnySessionEvent, isEvent, sessionUsage, type TurnEndReason, usageCostText } from '@dsh/session'

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
  /** The oldest approval still waiting: its request id and what it would do. */
  approval?: { requestId: string; summary: string; toolName?: string }
}

export function sessionActivity(events: readonly AnySessionEvent[], seedLength = 0): SessionActivity {
  const asked = new Map<string, { requestId: string; summary: string; toolName?: string }>()
  const questions = new Map<string, string>()
  let open = false
  let model: string | undefined
  let lastTurnEnd: TurnEndReason | undefined
  for (const event of events.slice(seedLength)) {
    if (isEvent(event, 'turn/start')) open = true
    else if (isEvent(event, 'turn/end')) {
      open = false
      lastTurnEnd = event.data.reason
      asked.clear()
      questions.clear()
    } else if (isEvent(event, 'request/header')) {
      const { provider, model: name } = event.data.config
      if (name) model = provider ? `${provider}:${name}` : name
    } else if (isEvent(event, 'approval/asked')) {
      const { requestId, summary, toolName } = event.data
      asked.set(requestId, { requestId, summary, ...(toolName ? { toolName } : {}) })
    } else if (isEvent(event, 'approval/decided')) {
      asked.delete(event.data.requestId)
    } else if (isEvent(event, 'tool/call')) {
      const call = event.data.call
      if (call.name === 'ask_user') questions.set(call.id, String(call.arguments?.question ?? 'a question'))
    } else if (isEvent(event, 'tool/result')) questions.delete(event.data.message.toolCallId)
  }
  const approval = [...asked.values()][0]
  const phase: ActivityPhase = approval ? 'approval' : questions.size > 0 ? 'question' : open ? 'running' : 'idle'
  const waitingOn = approval
    ? (approval.toolName ?? approval.summary)
    : phase === 'question'
      ? [...questions.values()][0]
      : undefined
  const last = events.at(-1)
  return {
    phase,
    ...(model ? { model } : {}),
    ...(last ? { lastActivity: last.time } : {}),
    ...(lastTurnEnd ? { lastTurnEnd } : {}),
    cost: usageCostText(sessionUsage(events, seedLength)),
    ...(waitingOn ? { waitingOn } : {}),
    ...(approval ? { approval } : {}),
  }
}
