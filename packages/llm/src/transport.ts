// The HTTP client of one provider row. By default it is Node's built-in `fetch`, looked up per request:
// it costs nothing to load, and its own limits (connect 10 s, response headers 300 s, silence in the
// body 300 s) sit at or outside the adapter's named bounds. Only when a row asks for bounds the built-in
// limits would cut short is the `undici` package loaded (on the first request, not at start-up), with
// an Agent whose own header and body timeouts are off (decisions 190 and 200).

/** Node's built-in fetch limits (undici's defaults inside Node), milliseconds. */
export const BUILT_IN_LIMITS = Object.freeze({ connect: 10_000, headers: 300_000, body: 300_000 })

export interface TransportBounds {
  connectTimeoutMs: number
  firstByteTimeoutMs: number
  idleTimeoutMs: number
}

export interface ModelTransport {
  /** `package` when the undici package serves this row, `built-in` for Node's fetch. */
  readonly kind: 'built-in' | 'package'
  fetch(url: string, init: RequestInit): Promise<Response>
  close(): Promise<void>
}

/** Whether Node's built-in fetch can honour these bounds without one of its own limits firing first. */
export function builtInFits(bounds: TransportBounds): boolean {
  return (
    bounds.connectTimeoutMs === BUILT_IN_LIMITS.connect &&
    bounds.firstByteTimeoutMs <= BUILT_IN_LIMITS.headers &&
    bounds.idleTimeoutMs < BUILT_IN_LIMITS.body
  )
}

export function createModelTransport(bounds: TransportBounds): ModelTransport {
  if (builtInFits(bounds)) {
    return { kind: 'built-in', fetch: (url, init) => globalThis.fetch(url, init), close: async () => {} }
  }
  let agent: Promise<{ fetch: typeof import('undici').fetch; agent: import('undici').Agent }> | undefined
  const load = () =>
    (agent ??= import('undici').then((undici) => ({
      fetch: undici.fetch,
      agent: new undici.Agent({ connect: { timeout: bounds.connectTimeoutMs }, headersTimeout: 0, bodyTimeout: 0 }),
    })))
  return {
    kind: 'package',
    async fetch(url, init) {
      const client = await load()
      // undici's Response is the same WHATWG Response as Node's global one, typed by its own package.
      return (await client.fetch(url, { ...(init as object), dispatcher: client.agent })) as unknown as Response
    },
    async close() {
      if (agent) await (await agent).agent.close().catch(() => {})
    },
  }
}

/** Which bound a network error of either client came from, by undici's error codes. */
export function timeoutOfCause(code: string | undefined): 'connect' | 'headers' | 'body' | undefined {
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect'
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return 'headers'
  if (code === 'UND_ERR_BODY_TIMEOUT') return 'body'
  return undefined
}
