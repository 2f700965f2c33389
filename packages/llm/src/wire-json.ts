// The request body's JSON text assembled from pieces, so a step serialises only what is new since the
// last request. A message's wire JSON depends only on the message and the adapter's options (never on
// the request around it), and session events are deep-frozen, so the text of a message object is
// computed once and reused while the object lives; the tool list is reused the same way. The output is
// exactly `JSON.stringify(body)` of the equivalent object (same keys in the same order): a request
// rebuilt from the log is byte-identical whether its pieces came from the cache or not.

/** A value whose JSON text is already known; stands in for it in `bodyText`. */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * Per-owner caches of JSON text by object identity; entries go with their objects. Only frozen objects
 * are cached (session events and tool lists are deep-frozen): a caller's mutable object is serialised
 * each time, so a later mutation can never send stale text.
 */
export class JsonTextCache<Owner extends object> {
  readonly #byOwner = new WeakMap<Owner, WeakMap<object, string>>()

  /** The JSON text of `make()` for `key`, computed on the first call for this owner and key. */
  of(owner: Owner, key: object, make: () => unknown): JsonText {
    if (!Object.isFrozen(key)) return new JsonText(JSON.stringify(make()))
    let texts = this.#byOwner.get(owner)
    if (!texts) {
      texts = new WeakMap()
      this.#byOwner.set(owner, texts)
    }
    let text = texts.get(key)
    if (text === undefined) {
      text = JSON.stringify(make())
      texts.set(key, text)
    }
    return new JsonText(text)
  }
}

/** `JSON.stringify(body)` where `JsonText` values (directly or as array items) are spliced in as is. */
export function bodyText(body: Readonly<Record<string, unknown>>): string {
  let out = '{'
  for (const key of Object.keys(body)) {
    const value = body[key]
    const text = valueText(value)
    if (text === undefined) continue
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(key)}:${text}`
  }
  return `${out}}`
}

function valueText(value: unknown): string | undefined {
  if (value instanceof JsonText) return value.text
  if (Array.isArray(value) && value.some((item) => item instanceof JsonText)) {
    // As JSON.stringify: an array item it cannot represent (undefined, a function) is written as null.
    return `[${value.map((item) => (item instanceof JsonText ? item.text : (JSON.stringify(item) ?? 'null'))).join(',')}]`
  }
  return JSON.stringify(value)
}
