// HarnessError: the one error class for programmer and configuration errors across dsh.
// `code` is a stable string that callers and tests match on; `facts` is frozen, JSON-safe data.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }
export type Facts = { readonly [key: string]: JsonValue }

/**
 * Converts an arbitrary value into lossless-enough JSON data: `undefined` and functions are dropped
 * from objects, bigints and symbols become strings, Errors become `{ name, message, code? }`,
 * non-finite numbers become strings and cycles become the string "[Circular]".
 */
export function toJsonSafe(value: unknown, seen = new WeakSet<object>()): JsonValue {
  if (value === null) return null
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      return Number.isFinite(value) ? value : String(value)
    case 'bigint':
    case 'symbol':
      return value.toString()
    case 'undefined':
    case 'function':
      return null
  }
  const object = value as object
  if (seen.has(object)) return '[Circular]'
  seen.add(object)
  try {
    if (object instanceof Error) {
      const out: Record<string, JsonValue> = { name: object.name, message: object.message }
      const code = (object as { code?: unknown }).code
      if (typeof code === 'string') out.code = code
      return out
    }
    if (Array.isArray(object)) return object.map((item) => toJsonSafe(item, seen))
    const out: Record<string, JsonValue> = {}
    for (const [key, item] of Object.entries(object)) {
      if (item === undefined || typeof item === 'function') continue
      out[key] = toJsonSafe(item, seen)
    }
    return out
  } finally {
    seen.delete(object)
  }
}

/** Freezes a value and everything reachable from it. Returns the same value. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const item of Object.values(value)) deepFreeze(item)
  }
  return value
}

/**
 * Freezes a fresh tree: what `JSON.parse` or `structuredClone` just returned (no cycles, nothing shared,
 * nothing frozen yet). Leaves first, without `deepFreeze`'s per-node checks: on a cold load of a long
 * session log this is most of the difference between reading it and parsing it.
 */
export function freezeTree<T>(value: T): T {
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index]
      if (typeof item === 'object' && item !== null) freezeTree(item)
    }
  } else {
    for (const key in value) {
      const item: unknown = value[key]
      if (typeof item === 'object' && item !== null) freezeTree(item)
    }
  }
  return Object.freeze(value)
}

/**
 * The error thrown for programmer errors and misconfiguration. Never used for model-recoverable
 * failures (those are tool results) or provider failures (those are terminal stream chunks).
 */
const brand = Symbol.for('dsh.HarnessError')

export class HarnessError extends Error {
  override readonly name = 'HarnessError'
  readonly [brand] = true
  readonly code: string
  readonly facts: Facts

  constructor(code: string, message: string, facts: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.facts = deepFreeze(toJsonSafe(facts) as Facts)
  }

  /**
   * True when `error` is a HarnessError, optionally with the given code. Checks a global brand rather
   * than `instanceof`, so errors from another copy of this package (a plugin's own install) match.
   */
  static is(error: unknown, code?: string): error is HarnessError {
    if (typeof error !== 'object' || error === null || (error as { [brand]?: unknown })[brand] !== true) return false
    return code === undefined || (error as HarnessError).code === code
  }

  toJSON(): { name: string; code: string; message: string; facts: Facts } {
    return { name: this.name, code: this.code, message: this.message, facts: this.facts }
  }
}
