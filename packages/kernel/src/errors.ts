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

/** Levenshtein distance between two strings (insert, delete, substitute; a swap of neighbours counts 1). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i ? (j ? 0 : i) : j)),
  )
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min((d[i - 1]?.[j] ?? 0) + 1, (d[i]?.[j - 1] ?? 0) + 1, (d[i - 1]?.[j - 1] ?? 0) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, (d[i - 2]?.[j - 2] ?? 0) + 1)
      ;(d[i] as number[])[j] = best
    }
  }
  return d[a.length]?.[b.length] ?? 0
}

/**
 * The known name closest to `word` (case-insensitive edit distance), when it is close enough to be
 * a likely typo: at most a third of the word's length (at least 1, at most 3 edits). Ties go to the
 * first candidate.
 */
export function closestName(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)))
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of candidates) {
    if (candidate === word) continue
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase())
    if (distance <= limit && distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** ` (did you mean "x"?)`, or '' when no known name is close: appended to an "unknown ..." message. */
export function didYouMean(word: string, candidates: Iterable<string>, quote = '"'): string {
  const name = closestName(word, candidates)
  return name === undefined ? '' : ` (did you mean ${quote}${name}${quote}?)`
}
