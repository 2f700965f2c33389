// The attachment references a session log holds: every `{ type: 'image', ref }` block anywhere in
// an event's data (user messages, inbox splices, tool results, MCP results), found by walking the JSON,
// so a new event type that carries images needs no registration here.

/** The distinct `sha256:` references inside `value` (an event, a list of events, any JSON). */
export function refsIn(value: unknown, into: Set<string> = new Set()): Set<string> {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const item = stack.pop()
    if (Array.isArray(item)) {
      for (const child of item) if (typeof child === 'object' && child !== null) stack.push(child)
    } else if (typeof item === 'object' && item !== null) {
      const record = item as Record<string, unknown>
      if (record.type === 'image' && typeof record.ref === 'string' && record.ref.startsWith('sha256:')) {
        into.add(record.ref)
      }
      for (const child of Object.values(record)) if (typeof child === 'object' && child !== null) stack.push(child)
    }
  }
  return into
}
