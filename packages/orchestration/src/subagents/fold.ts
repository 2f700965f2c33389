// The fold that reads a parent's log back into one record per child, and the outcome of a turn.
import { type AnySessionEvent, isEvent, type TurnEndReason } from '@dsh/session'
import type { SubagentOutcome, SubagentRecord } from './index.js'

/** The session events this package declares (`ctx.sessions.defineEvent` on apply). */
export const SUBAGENT_EVENT_TYPES = [
  'subagent/started',
  'subagent/message',
  'subagent/finished',
  'subagent/closed',
  'subagent/reopened',
  'subagent/progress',
] as const

/** Maps a turn's end reason to a run outcome. */
export function outcomeOf(reason: TurnEndReason): SubagentOutcome {
  if (reason === 'completed') return 'completed'
  if (reason === 'aborted') return 'cancelled'
  if (reason === 'interrupted') return 'interrupted'
  return 'failed'
}

/** Folds the `subagent/*` events of a parent's log into one record per child, in start order. */
export function foldSubagents(events: readonly AnySessionEvent[]): SubagentRecord[] {
  const records = new Map<string, SubagentRecord>()
  for (const event of events) {
    if (!isEvent(event, ...SUBAGENT_EVENT_TYPES)) continue
    const id = event.data.subagentId
    if (event.type === 'subagent/started') {
      const started = event.data
      const record: SubagentRecord = {
        subagentId: id,
        provider: started.provider,
        mode: started.mode,
        childSession: started.childSession,
        depth: started.depth,
        status: 'running',
        runs: 1,
        reopenable: false,
      }
      if (started.description !== undefined) record.description = started.description
      if (started.callId !== undefined) record.callId = started.callId
      records.set(id, record)
      continue
    }
    const record = records.get(id)
    if (!record) continue
    if (event.type === 'subagent/message') {
      record.runs = Math.max(record.runs, event.data.run + 1)
      if (record.status !== 'closed') record.status = 'running'
    } else if (event.type === 'subagent/finished') {
      const finished = event.data
      record.last = { run: finished.run, outcome: finished.outcome, text: finished.text }
      if (finished.reason !== undefined) record.last.reason = finished.reason
      if (finished.synthetic) record.last.synthetic = true
      if (record.status !== 'closed') record.status = finished.run + 1 >= record.runs ? 'idle' : 'running'
    } else if (event.type === 'subagent/closed') {
      record.status = 'closed'
      record.reopenable = record.mode === 'continuable' && event.data.final !== true
    } else if (event.type === 'subagent/reopened') {
      record.status = 'idle'
      record.reopenable = false
    }
  }
  return [...records.values()]
}
