// Lossless JSON: event data is cloned into plain JSON on append and deep-frozen, so what the log holds
// in memory is exactly what a reader gets back from disk.
import type { JsonValue } from '@dsh/kernel'

/**
 * Returns a deep, frozen, plain-JSON copy of `value`, or the path of the first part JSON cannot hold
 * exactly. Object properties whose value is `undefined` are dropped (JSON has no such property);
 * everything else that does not survive `JSON.stringify` unchanged (functions, symbols, bigints,
 * non-finite numbers, `undefined` in arrays, class instances, cycles) is refused.
 */
export function cloneJson(value: unknown, path = 'data', seen: Set<object> = new Set()): JsonValue | JsonFailure {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      return Number.isFinite(value) ? value : new JsonFailure(`${path} is ${value}, which JSON cannot hold`)
    case 'object':
      break
    default:
      return new JsonFailure(`${path} is a ${typeof value}, which JSON cannot hold`)
  }
  if (value === null) return null
  if (seen.has(value)) return new JsonFailure(`${path} is circular`)
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      const out: JsonValue[] = new Array(value.length)
      for (let i = 0; i < value.length; i++) {
        const item = cloneJson(value[i], `${path}[${i}]`, seen)
        if (isFailure(item)) return item
        out[i] = item
      }
      return Object.freeze(out) as JsonValue[]
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) {
      return new JsonFailure(`${path} is a ${proto?.constructor?.name ?? 'non-plain'} object; use plain JSON data`)
    }
    const out: Record<string, JsonValue> = {}
    for (const key of Object.keys(value)) {
      const item = (value as Record<string, unknown>)[key]
      if (item === undefined) continue
      const cloned = cloneJson(item, `${path}.${key}`, seen)
      if (isFailure(cloned)) return cloned
      out[key] = cloned
    }
    return Object.freeze(out)
  } finally {
    seen.delete(value)
  }
}

/** Why a value is not lossless JSON, and where. */
export class JsonFailure {
  constructor(readonly error: string) {}
}

function isFailure(value: unknown): value is JsonFailure {
  return value instanceof JsonFailure
}
