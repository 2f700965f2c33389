// Where a replay diverges from the session it replays: the requests (config, system prompt, tool
// schemas, messages) compared one by one, then the tool results, each with a short readable diff.
// A replay runs in a scratch copy of the workspace on another day, so the scratch path is read as
// the original workspace and the replay's date as the original's (both say so in the report).
import type { AnySessionEvent, LoggedRequest, UnknownSessionEvent } from '@dsh/session'

export { type LoggedRequest, loggedRequests } from '@dsh/session'

type Event = AnySessionEvent | UnknownSessionEvent

export interface Divergence {
  /** `requests`: a different number of requests; `request`: request `index` differs; `tool-result`: call `index`. */
  kind: 'requests' | 'request' | 'tool-result'
  index: number
  /** Which part: `config`, `system`, `tools`, `messages[3]`, the tool call id... */
  part: string
  /** A few lines: what the original had (`-`) and what the replay has (`+`). */
  diff: string[]
  /** The composition rows behind a differing system prompt or tool list, one line each. */
  rows?: string[]
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** An event's data as a record (an empty one when it is not an object). */
export function dataOf(event: Event): Record<string, unknown> {
  const data: unknown = event.data
  return isRecord(data) ? data : {}
}

/** Tool results in log order: call id, name, the text the model read, and whether it was an error. */
export function loggedResults(
  events: readonly Event[],
): Array<{ id: string; name: string; text: string; isError: boolean }> {
  const out: Array<{ id: string; name: string; text: string; isError: boolean }> = []
  for (const event of events) {
    if (event.type !== 'tool/result') continue
    const message = dataOf(event).message as
      | { toolCallId?: string; toolName?: string; isError?: boolean; content?: Array<{ type: string; text?: string }> }
      | undefined
    out.push({
      id: message?.toolCallId ?? '',
      name: message?.toolName ?? '',
      text: (message?.content ?? [])
        .map((block) => (block.type === 'text' ? (block.text ?? '') : `[${block.type}]`))
        .join('\n'),
      isError: message?.isError === true,
    })
  }
  return out
}

/** The first lines where two texts differ, as `-`/`+` lines with a little context. */
export function lineDiff(before: string, after: string, max = 12): string[] {
  const a = before.split('\n')
  const b = after.split('\n')
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length - 1
  let endB = b.length - 1
  while (endA >= start && endB >= start && a[endA] === b[endB]) {
    endA--
    endB--
  }
  const out = [`@@ line ${start + 1}`]
  for (const line of a.slice(start, endA + 1).slice(0, max)) out.push(`- ${line}`)
  for (const line of b.slice(start, endB + 1).slice(0, max)) out.push(`+ ${line}`)
  return out
}

type ToolMessage = { role?: string; toolName?: string; toolCallId?: string; content?: Array<{ text?: string }> }

function toolText(message: ToolMessage | undefined): string {
  return (message?.content ?? []).map((block) => block.text ?? '').join('\n')
}

function stable(value: unknown): string {
  return JSON.stringify(value, null, 1) ?? 'undefined'
}

/** The first divergence between the original's requests and results and the replay's, if any. */
export function firstDivergence(
  original: { requests: LoggedRequest[]; results: ReturnType<typeof loggedResults> },
  replay: { requests: LoggedRequest[]; results: ReturnType<typeof loggedResults> },
  normalize: (text: string) => string,
): Divergence | undefined {
  const count = Math.min(original.requests.length, replay.requests.length)
  for (let index = 0; index < count; index++) {
    const a = original.requests[index] as LoggedRequest
    const b = replay.requests[index] as LoggedRequest
    const parts: Array<[string, string, string]> = [
      ['config', stable(a.config), normalize(stable(b.config))],
      ['system', a.system, normalize(b.system)],
    ]
    const toolNames = (tools: unknown[]) => tools.map((tool) => (tool as { name?: string }).name ?? '?')
    for (const [part, x, y] of parts) if (x !== y) return { kind: 'request', index, part, diff: lineDiff(x, y) }
    if (stable(a.tools) !== normalize(stable(b.tools))) {
      const names = [...new Set([...toolNames(a.tools), ...toolNames(b.tools)])]
      const changed = names.filter(
        (name) =>
          stable(a.tools.find((tool) => (tool as { name?: string }).name === name)) !==
          normalize(stable(b.tools.find((tool) => (tool as { name?: string }).name === name))),
      )
      return {
        kind: 'request',
        index,
        part: `tools (${changed.join(', ')})`,
        diff: lineDiff(stable(a.tools), normalize(stable(b.tools))),
      }
    }
    const messages = Math.max(a.messages.length, b.messages.length)
    for (let m = 0; m < messages; m++) {
      const x = stable(a.messages[m])
      const y = normalize(stable(b.messages[m]))
      if (x === y) continue
      // A tool message that differs is a tool result that changed: say which call.
      const tool = a.messages[m] as ToolMessage | undefined
      if (tool?.role === 'tool')
        return {
          kind: 'tool-result',
          index,
          part: `${tool.toolName ?? '?'} ${tool.toolCallId ?? '?'}`,
          diff: lineDiff(toolText(tool), normalize(toolText(b.messages[m] as ToolMessage | undefined))),
        }
      return { kind: 'request', index, part: `messages[${m}]`, diff: lineDiff(x, y) }
    }
  }
  const results = Math.min(original.results.length, replay.results.length)
  for (let index = 0; index < results; index++) {
    const a = original.results[index]
    const b = replay.results[index]
    if (!a || !b) continue
    const y = normalize(b.text)
    if (a.text !== y || a.isError !== b.isError)
      return { kind: 'tool-result', index, part: `${a.name} ${a.id}`, diff: lineDiff(a.text, y) }
  }
  if (original.requests.length !== replay.requests.length)
    return {
      kind: 'requests',
      index: count,
      part: 'count',
      diff: [`- ${original.requests.length} requests`, `+ ${replay.requests.length} requests`],
    }
  return undefined
}
