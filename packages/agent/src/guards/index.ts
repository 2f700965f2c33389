// @dsh/agent/guards: policies on the tool pipeline that ship in the base bundle, each its own row so a patch
// can disable or retune one (`- id: guard-repeat` / `disabled: true`). None of them is a service:
// they are listeners on `tools/*` and `agent/pre-step`. This module holds what they share.

/**
 * Error codes the guards put on tool results:
 * - `TOOL_TIMEOUT`: the body ran past its tool's time limit and was stopped (timeout row).
 * - `REPEATED_FAILURE`: the same call with the same arguments already failed too often; not run (repeat row).
 */
export const GUARD_CODES = ['TOOL_TIMEOUT', 'REPEATED_FAILURE'] as const
export type GuardCode = (typeof GUARD_CODES)[number]

/** JSON with object keys sorted: equal arguments give equal text whatever their key order. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

export type { LargeWriteConfig } from './large-write.js'
export type { RepeatBreakerConfig } from './repeat.js'
export type { TimeoutConfig } from './timeout.js'
