// Cold-resume repair: the synthetic events that close an open tail. Raw facts are never rewritten;
// the repair only appends what the log is missing so every call has a result and every turn an end.
import type { ToolResultMessage } from '@dsh/llm'
import type { AppendOptions, SessionEventMap } from './events.js'
import type { OpenTail } from './log.js'

type Repaired = 'tool/result' | 'step/end' | 'turn/end'

/** One event the repair appends; `type` narrows `data`. */
export type RepairEvent<T extends Repaired = Repaired> = {
  [K in T]: { type: K; data: SessionEventMap[K]; options: AppendOptions }
}[T]

/** The code of a synthetic tool result: never started, or started with an outcome nobody recorded. */
export type RepairCode = 'TOOL_NOT_STARTED' | 'TOOL_OUTCOME_UNKNOWN'

function result(id: string, name: string, text: string): ToolResultMessage {
  return { role: 'tool', toolCallId: id, toolName: name, content: [{ type: 'text', text }], isError: true }
}

/**
 * The events that close `tail`, in order: one error result per call without a result
 * (`TOOL_NOT_STARTED` when the model asked for it but no `tool/call` was logged,
 * `TOOL_OUTCOME_UNKNOWN` when it was logged), then `step/end`, then `turn/end` with reason
 * `interrupted`. Empty when the tail is closed.
 */
export function repairEvents(tail: OpenTail): RepairEvent[] {
  const out: RepairEvent[] = []
  for (const call of tail.calls) {
    const started = call.callSeq !== undefined
    const code: RepairCode = started ? 'TOOL_OUTCOME_UNKNOWN' : 'TOOL_NOT_STARTED'
    const text = started
      ? `${code}: the session was interrupted after tool ${call.name} was dispatched and before its result was recorded. It may or may not have taken effect: check the outside world before running it again.`
      : `${code}: the session was interrupted before tool ${call.name} was started. It did not run.`
    const source = started ? call.callSeq : call.requestSeq
    out.push({
      type: 'tool/result',
      data: { message: result(call.id, call.name, text), code, synthetic: true },
      options: { surfaceOp: { op: 'append' }, ...(source === undefined ? {} : { sourceEventSeqs: [source] }) },
    })
  }
  if (tail.step !== undefined) {
    out.push({ type: 'step/end', data: { reason: 'interrupted' }, options: { sourceEventSeqs: [tail.step] } })
  }
  if (tail.turn !== undefined) {
    out.push({
      type: 'turn/end',
      data: { reason: 'interrupted', message: 'the session was interrupted; closed on resume' },
      options: { sourceEventSeqs: [tail.turn] },
    })
  }
  return out
}
