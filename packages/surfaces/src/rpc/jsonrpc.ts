// A newline-delimited JSON-RPC 2.0 endpoint over a byte stream pair: framing, validation of each
// message, dispatch to named-param handlers, and error replies. Bad input is answered, never fatal.
import { HarnessError, toJsonSafe } from '@dsh/kernel'
import { type JsonRpcErrorObject, type JsonRpcId, RpcErrorCode, type RpcErrorData } from './protocol.js'

/** A failure a handler reports to the client as a JSON-RPC error. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: RpcErrorData,
  ) {
    super(message)
    this.name = 'RpcError'
  }

  static invalidParams(message: string): RpcError {
    return new RpcError(RpcErrorCode.INVALID_PARAMS, message, { code: 'INVALID_PARAMS' })
  }

  /** A refused request with a stable `data.code`. */
  static refused(code: string, message: string, facts?: Record<string, unknown>): RpcError {
    return new RpcError(RpcErrorCode.SERVER_ERROR, message, facts ? { code, facts } : { code })
  }
}

export type RpcHandler = (params: Record<string, unknown>) => unknown

export interface EndpointOptions {
  input: NodeJS.ReadableStream
  output: NodeJS.WritableStream
  handlers: Record<string, RpcHandler>
  /** Longest accepted line in characters (default 16 Mi); longer lines are answered with -32600. */
  maxLineBytes?: number
  /** Diagnostics (never written to `output`). */
  log?: (line: string) => void
  /** Called once when the input ends or errors. */
  onEnd?: () => void
}

/** Maps any thrown value to the error object sent on the wire. */
export function toErrorObject(error: unknown): JsonRpcErrorObject {
  if (error instanceof RpcError) {
    return error.data
      ? { code: error.code, message: error.message, data: error.data }
      : { code: error.code, message: error.message }
  }
  if (HarnessError.is(error)) {
    return {
      code: RpcErrorCode.SERVER_ERROR,
      message: error.message,
      data: { code: error.code, facts: toJsonSafe(error.facts) as Record<string, unknown> },
    }
  }
  const message = error instanceof Error ? error.message : String(error)
  return { code: RpcErrorCode.INTERNAL_ERROR, message: `internal error: ${message}`, data: { code: 'INTERNAL' } }
}

/** Reads lines, dispatches requests, writes responses and notifications. */
export class JsonRpcEndpoint {
  /** Pieces of the line being received (its newline has not arrived yet). */
  private pending: string[] = []
  private pendingLength = 0
  private ended = false
  private writable = true
  private inFlight = 0
  /** Inside an over-long line: input is dropped up to its newline. */
  private skipping = false
  private readonly drainWaiters: Array<() => void> = []
  private readonly options: EndpointOptions
  private readonly maxLine: number

  constructor(options: EndpointOptions) {
    this.options = options
    this.maxLine = options.maxLineBytes ?? 16 * 1024 * 1024
    const input = options.input
    input.setEncoding?.('utf8')
    input.on('data', (chunk: string | Buffer) =>
      this.receive(typeof chunk === 'string' ? chunk : chunk.toString('utf8')),
    )
    input.on('end', () => this.end())
    input.on('error', (error: Error) => {
      options.log?.(`input error: ${error.message}`)
      this.end()
    })
    options.output.on('error', (error: Error) => {
      this.writable = false
      options.log?.(`output error: ${error.message}`)
    })
  }

  /** Writes a notification (dropped once the output is gone). */
  notify(method: string, params: unknown): void {
    this.write({ jsonrpc: '2.0', method, params })
  }

  /** Resolves once no handler is running (every request received so far is answered). */
  drained(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve()
    return new Promise((resolve) => this.drainWaiters.push(resolve))
  }

  /** Stops writing; later notifications and replies are dropped. */
  stopWriting(): void {
    this.writable = false
  }

  private write(message: unknown): void {
    if (!this.writable) return
    this.options.output.write(`${JSON.stringify(message)}\n`)
  }

  private end(): void {
    if (this.ended) return
    this.ended = true
    const rest = this.skipping ? '' : this.pending.join('').trim()
    this.pending = []
    this.pendingLength = 0
    if (rest) this.line(rest)
    this.options.onEnd?.()
  }

  /**
   * Splits input into lines in time linear in the input: only the new chunk is searched for a
   * newline, and the pieces of an unfinished line are joined once, at its newline. A line past
   * `maxLine` is answered with -32600 as soon as it is known to be too long and the rest of it is
   * skipped unread, so at most `maxLine` characters are ever held.
   */
  private receive(chunk: string): void {
    let start = 0
    while (start <= chunk.length) {
      const newline = chunk.indexOf('\n', start)
      if (this.skipping) {
        if (newline < 0) return
        this.skipping = false
        start = newline + 1
        continue
      }
      const piece = newline < 0 ? chunk.slice(start) : chunk.slice(start, newline)
      if (this.pendingLength + piece.length > this.maxLine) {
        this.pending = []
        this.pendingLength = 0
        this.tooLong()
        if (newline < 0) {
          this.skipping = true
          return
        }
      } else if (newline < 0) {
        if (piece) {
          this.pending.push(piece)
          this.pendingLength += piece.length
        }
        return
      } else {
        const line = this.pending.length > 0 ? this.pending.join('') + piece : piece
        this.pending = []
        this.pendingLength = 0
        if (line.trim()) this.line(line)
      }
      start = newline + 1
    }
  }

  private tooLong(): void {
    this.replyError(null, {
      code: RpcErrorCode.INVALID_REQUEST,
      message: `invalid request: a message longer than ${this.maxLine} characters`,
      data: { code: 'INVALID_REQUEST' },
    })
  }

  private replyError(id: JsonRpcId | null, error: JsonRpcErrorObject): void {
    this.write({ jsonrpc: '2.0', id, error })
  }

  private line(text: string): void {
    let message: unknown
    try {
      message = JSON.parse(text)
    } catch (error) {
      this.replyError(null, {
        code: RpcErrorCode.PARSE_ERROR,
        message: `parse error: ${(error as Error).message}`,
        data: { code: 'PARSE_ERROR' },
      })
      return
    }
    if (Array.isArray(message)) {
      this.replyError(null, invalid('batches are not supported: send one JSON-RPC message per line'))
      return
    }
    if (typeof message !== 'object' || message === null) {
      this.replyError(null, invalid('a message must be a JSON object'))
      return
    }
    const { jsonrpc, id, method, params } = message as Record<string, unknown>
    const validId = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))
    const replyId = validId ? (id as JsonRpcId) : null
    if (method === undefined && ('result' in message || 'error' in message)) {
      this.options.log?.(`ignoring a response to request ${String(id)}: this server sends no requests`)
      return
    }
    const problem =
      jsonrpc !== '2.0'
        ? '"jsonrpc" must be "2.0"'
        : typeof method !== 'string'
          ? '"method" must be a string'
          : id !== undefined && !validId
            ? '"id" must be a string or a number'
            : undefined
    if (problem !== undefined || typeof method !== 'string') {
      this.replyError(replyId, invalid(problem ?? '"method" must be a string'))
      return
    }
    const isNotification = id === undefined
    const handler = Object.hasOwn(this.options.handlers, method) ? this.options.handlers[method] : undefined
    if (!handler) {
      if (!isNotification) {
        this.replyError(replyId, {
          code: RpcErrorCode.METHOD_NOT_FOUND,
          message: `method not found: ${method}`,
          data: { code: 'METHOD_NOT_FOUND' },
        })
      }
      return
    }
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
      if (!isNotification) {
        this.replyError(replyId, {
          code: RpcErrorCode.INVALID_PARAMS,
          message: '"params" must be an object (named parameters)',
          data: { code: 'INVALID_PARAMS' },
        })
      }
      return
    }
    const args = (params ?? {}) as Record<string, unknown>
    this.inFlight++
    void (async () => {
      try {
        const result = await handler(args)
        if (!isNotification) this.write({ jsonrpc: '2.0', id: replyId, result: result ?? {} })
      } catch (error) {
        const object = toErrorObject(error)
        if (object.code === RpcErrorCode.INTERNAL_ERROR) this.options.log?.(`${method} failed: ${String(error)}`)
        if (!isNotification) this.replyError(replyId, object)
      } finally {
        if (--this.inFlight === 0) for (const resolve of this.drainWaiters.splice(0)) resolve()
      }
    })()
  }
}

function invalid(message: string): JsonRpcErrorObject {
  return {
    code: RpcErrorCode.INVALID_REQUEST,
    message: `invalid request: ${message}`,
    data: { code: 'INVALID_REQUEST' },
  }
}

// ---- param readers: each throws RpcError INVALID_PARAMS naming the field ----

export function requireString(params: Record<string, unknown>, name: string): string {
  const value = params[name]
  if (typeof value !== 'string' || value === '') throw RpcError.invalidParams(`"${name}" must be a non-empty string`)
  return value
}

export function optionalString(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw RpcError.invalidParams(`"${name}" must be a string`)
  return value
}

export function optionalInteger(params: Record<string, unknown>, name: string, min = 0): number | undefined {
  const value = params[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw RpcError.invalidParams(`"${name}" must be an integer >= ${min}`)
  }
  return value
}
