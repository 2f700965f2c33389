// A local Chat Completions server for tests: listens on 127.0.0.1 (port 0), answers each request with
// the next scripted response, records every request (body, headers, cancellation time) and can inject
// faults: HTTP errors with bodies, keep-alives, slow streams, malformed frames, mid-stream disconnects.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'

/** One step of a scripted SSE body. */
export type SseStep =
  /** `data: <JSON>` followed by a blank line (a string is sent verbatim after `data: `). */
  | { data: unknown }
  /** A named event: `event: <name>` then `data: <JSON>` (Anthropic's framing). */
  | { event: string; data: unknown }
  /** `data: [DONE]`. */
  | { done: true }
  /** An SSE comment line, e.g. `{ comment: 'keep-alive' }` sends `: keep-alive`. */
  | { comment: string }
  /** Bytes written exactly as given (malformed frames, odd line endings). */
  | { raw: string }
  /** Pause before the next step (slow streams). */
  | { delayMs: number }
  /** Destroy the socket here: a mid-stream disconnect. */
  | { disconnect: true }
  /** Stop writing and keep the connection open until the client leaves. */
  | { hang: true }
  /** Wait until the test says so (orders two clients' steps without timing guesses). */
  | { until: Promise<unknown> }

export type MockResponse =
  | { type: 'sse'; steps: SseStep[]; status?: number; headers?: Record<string, string> }
  /** A JSON body with a status: HTTP errors as providers send them. */
  | { type: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  | { type: 'text'; status: number; body: string; headers?: Record<string, string> }
  /** Accept the request and never answer. */
  | { type: 'hang' }
  /** Destroy the connection without a response. */
  | { type: 'reset' }

export interface RecordedRequest {
  /** 0-based arrival order. */
  index: number
  method: string
  path: string
  headers: Record<string, string | string[] | undefined>
  /** The parsed JSON body (undefined when it was not JSON). */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary fields of the recorded body
  body: any
  rawBody: string
  /** `performance.now()` when the request arrived. */
  receivedAt: number
  /** `performance.now()` when the client closed the connection before the response ended. */
  cancelledAt?: number
  /** True once the scripted response was written completely. */
  completed: boolean
}

export interface MockLlmServerOptions {
  /** Responses served in request order (more can be added with `enqueue`). */
  responses?: MockResponse[]
  /** Decides a response when the queue is empty; undefined falls through to the "unscripted" 500. */
  respond?: (request: RecordedRequest) => MockResponse | undefined
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

/** The running server. Close it with `close()` or `await using`. */
export class MockLlmServer {
  /** Base URL, e.g. `http://127.0.0.1:41234` (adapters append `/chat/completions`). */
  readonly url: string
  readonly requests: RecordedRequest[] = []
  readonly #server: Server
  readonly #queue: MockResponse[]
  readonly #respond: MockLlmServerOptions['respond']
  readonly #waiters = new Set<() => void>()
  /** Responses whose connection the server itself cut (a fault): not client cancellations. */
  readonly #serverClosed = new WeakSet<ServerResponse>()

  constructor(server: Server, options: MockLlmServerOptions) {
    this.#server = server
    this.#queue = [...(options.responses ?? [])]
    this.#respond = options.respond
    const { port } = server.address() as AddressInfo
    this.url = `http://127.0.0.1:${port}`
  }

  /** Appends responses to the queue. */
  enqueue(...responses: MockResponse[]): void {
    this.#queue.push(...responses)
  }

  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  async waitForRequests(count: number, timeoutMs = 5000): Promise<RecordedRequest[]> {
    await this.#waitUntil(() => this.requests.length >= count, timeoutMs, `${count} request(s)`)
    return this.requests.slice(0, count)
  }

  /** Resolves with `cancelledAt` once request `index` was cancelled by the client. */
  async waitForCancel(index: number, timeoutMs = 5000): Promise<number> {
    await this.#waitUntil(
      () => this.requests[index]?.cancelledAt !== undefined,
      timeoutMs,
      `cancel of request ${index}`,
    )
    return this.requests[index]?.cancelledAt as number
  }

  /** Stops listening and destroys open connections. Idempotent. */
  async close(): Promise<void> {
    if (!this.#server.listening) return
    const closed = new Promise<void>((done) => this.#server.close(() => done()))
    this.#server.closeAllConnections()
    await closed
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  /** @internal */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const rawBody = Buffer.concat(chunks).toString('utf8')
    let body: unknown
    try {
      body = JSON.parse(rawBody)
    } catch {}
    const record: RecordedRequest = {
      index: this.requests.length,
      method: req.method ?? '',
      path: req.url ?? '',
      headers: { ...req.headers },
      body,
      rawBody,
      receivedAt: performance.now(),
      completed: false,
    }
    res.on('close', () => {
      if (!res.writableFinished && !this.#serverClosed.has(res)) record.cancelledAt = performance.now()
      this.#notify()
    })
    this.requests.push(record)
    this.#notify()
    const response = this.#queue.shift() ?? this.#respond?.(record)
    if (!response) {
      return this.#send(res, record, {
        type: 'json',
        status: 500,
        body: { error: { message: `mock server: no scripted response for request #${record.index}`, type: 'mock' } },
      })
    }
    await this.#send(res, record, response)
  }

  async #send(res: ServerResponse, record: RecordedRequest, response: MockResponse): Promise<void> {
    const requestId = `req-${record.index}`
    switch (response.type) {
      case 'hang':
        return
      case 'reset':
        this.#serverClosed.add(res)
        res.socket?.destroy()
        return
      case 'json':
      case 'text': {
        const text = response.type === 'json' ? JSON.stringify(response.body) : response.body
        res.writeHead(response.status, {
          'content-type': response.type === 'json' ? 'application/json' : 'text/plain',
          'x-request-id': requestId,
          ...response.headers,
        })
        res.end(text, () => {
          record.completed = true
        })
        return
      }
      case 'sse': {
        res.writeHead(response.status ?? 200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          'x-request-id': requestId,
          ...response.headers,
        })
        res.flushHeaders()
        for (const step of response.steps) {
          if (res.destroyed) return
          if ('delayMs' in step) await sleep(step.delayMs)
          else if ('until' in step) await step.until
          else if ('disconnect' in step) {
            this.#serverClosed.add(res)
            res.socket?.destroy()
            return
          } else if ('hang' in step) return
          else if ('raw' in step) res.write(step.raw)
          else if ('comment' in step) res.write(`: ${step.comment}\n\n`)
          else if ('done' in step) res.write('data: [DONE]\n\n')
          else {
            const data = typeof step.data === 'string' ? step.data : JSON.stringify(step.data)
            res.write('event' in step ? `event: ${step.event}\ndata: ${data}\n\n` : `data: ${data}\n\n`)
          }
        }
        if (!res.destroyed) {
          res.end(() => {
            record.completed = true
          })
        }
        return
      }
    }
  }

  #notify(): void {
    for (const waiter of this.#waiters) waiter()
  }

  #waitUntil(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (ready()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!ready()) return
        cleanup()
        resolve()
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`mock server: timed out after ${timeoutMs} ms waiting for ${what}`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        this.#waiters.delete(check)
      }
      this.#waiters.add(check)
    })
  }
}

/** Starts a mock server on 127.0.0.1 with an ephemeral port. */
export async function startMockLlmServer(options: MockLlmServerOptions = {}): Promise<MockLlmServer> {
  let mock: MockLlmServer | undefined
  const server = createServer((req, res) => {
    mock?.handle(req, res).catch(() => res.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  mock = new MockLlmServer(server, options)
  return mock
}
