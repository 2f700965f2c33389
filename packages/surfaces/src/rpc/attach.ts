// The attach socket of a session driven in this process (a background run): `dsh attach ID` connects
// to `$DSH_HOME/run/<session>.sock` and speaks JSON-RPC over it, with the wire table's operations on
// that one session: `attach` (what it is, its transcript so far, what waits for an answer), then
// prompt, steer, cancel, approval/respond, question/respond and session/usage; notifications
// `session/event`, `approval/*` and `question/*` as `dsh rpc` sends them. The directory is 0700 and
// hidden from confined commands (see @dsh/world/sandbox/secrets), so the model cannot answer its own
// approvals through it.
import { chmodSync, mkdirSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import type { Context } from '@dsh/kernel'
import type { SessionHost, SessionHostListeners } from '../host/index.js'
import { renderTranscript } from '../host/transcript.js'
import type { WireScope } from '../wire/operation.js'
import { type OperationName, runOperation } from '../wire/operations.js'
import { pendingApproval, pendingNotifications, pendingQuestion } from '../wire/pending.js'
import { attachDir, attachSocketPath } from './attach-path.js'
import { JsonRpcEndpoint, RpcError, type RpcHandler } from './jsonrpc.js'

/** What an attached client may do to the session. */
export const ATTACH_OPERATIONS = [
  'prompt',
  'steer',
  'cancel',
  'approval/respond',
  'question/respond',
  'session/usage',
] as const satisfies readonly OperationName[]

export { attachCall, attachDir, attachSocketPath } from './attach-path.js'

export interface AttachResult {
  sessionId: string
  pid: number
  cwd: string
  /** The conversation so far, as `dsh sessions show` prints it. */
  transcript: string[]
  approvals: ReturnType<typeof pendingApproval>[]
  questions: ReturnType<typeof pendingQuestion>[]
}

export interface AttachServer {
  /** Give these to the session host: what it asks reaches every attached client. */
  readonly listeners: SessionHostListeners
  /** Starts serving session `sessionId` of `host` on its socket. */
  listen(host: SessionHost, sessionId: string): Promise<string>
  /** Stops listening, ends every connection and removes the socket. Idempotent. */
  close(): Promise<void>
}

export function attachServer(ctx: Context, options: { home: string; log?: (line: string) => void }): AttachServer {
  const endpoints = new Set<JsonRpcEndpoint>()
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let path: string | undefined
  let unwatch: (() => void) | undefined
  const broadcast = (method: string, params: unknown) => {
    for (const endpoint of endpoints) endpoint.notify(method, params as never)
  }
  const listeners: SessionHostListeners = pendingNotifications((method, params) => broadcast(method, params))

  const connect = (host: SessionHost, sessionId: string, socket: Socket) => {
    sockets.add(socket)
    const scope: WireScope = {
      ctx,
      wire: 'rpc',
      cwd: (cwd) => cwd ?? process.cwd(),
      model: (route) => route,
      remote: false,
      loopback: true,
      cancelReason: 'cancelled from an attached terminal',
      attached: () => {},
    }
    const only = (params: Record<string, unknown>) => {
      if (params.sessionId !== undefined && params.sessionId !== sessionId)
        throw RpcError.refused('SESSION_NOT_ATTACHED', `this socket serves session ${sessionId} only`)
    }
    const handlers: Record<string, RpcHandler> = {
      attach: (): AttachResult => {
        const session = ctx.sessions.get(sessionId)
        return {
          sessionId,
          pid: process.pid,
          cwd: session?.header.cwd ?? '',
          transcript: session ? renderTranscript(session.events, 'text') : [],
          approvals: host.approvals().map(pendingApproval),
          questions: host.questions().map(pendingQuestion),
        }
      },
    }
    for (const name of ATTACH_OPERATIONS) {
      handlers[name] = (params) => {
        only(params)
        return runOperation(name, host, params, scope)
      }
    }
    const endpoint = new JsonRpcEndpoint({
      input: socket,
      output: socket,
      handlers,
      log: options.log,
      onEnd: () => {
        endpoints.delete(endpoint)
        socket.end()
      },
    })
    endpoints.add(endpoint)
    socket.on('close', () => {
      endpoints.delete(endpoint)
      sockets.delete(socket)
    })
    socket.on('error', () => {})
  }

  return {
    listeners,
    async listen(host, sessionId) {
      const dir = attachDir(options.home)
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      chmodSync(dir, 0o700)
      path = attachSocketPath(options.home, sessionId)
      rmSync(path, { force: true })
      unwatch = ctx.sessions.watch((session, event) => {
        if (session.id === sessionId) broadcast('session/event', { sessionId, event })
      })
      const listening = createServer((socket) => connect(host, sessionId, socket))
      server = listening
      await new Promise<void>((resolve, reject) => {
        listening.once('error', reject)
        listening.listen(path, () => resolve())
      })
      chmodSync(path, 0o600)
      return path
    },
    async close() {
      unwatch?.()
      unwatch = undefined
      const closing = server
      server = undefined
      for (const socket of sockets) socket.end()
      if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()))
      for (const socket of sockets) socket.destroy()
      if (path) rmSync(path, { force: true })
    },
  }
}
