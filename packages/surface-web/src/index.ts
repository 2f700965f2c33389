// @dsh/surface-web: the `ctx.webHost` seam. A surface (the `dsh web` command) asks it to listen; the
// provider row `@dsh/surface-web/server` serves unary JSON under /api, the downlink-only event streams
// and the browser client's build, behind the trust fence of `./trust`.
import { Service } from '@dsh/kernel'

export type * from './protocol.js'
export type { FenceOptions, FenceRequest, FenceVerdict } from './trust.js'
export { checkRequest, hostAllowed, isLoopbackAddress, isLoopbackName, sameOrigin } from './trust.js'

declare module 'cordis' {
  interface Context {
    webHost: WebHost
  }
}

export interface WebListenOptions {
  /** Address to bind (default 127.0.0.1). Anything but loopback makes the host require a token. */
  host?: string
  /** Port (default 3080; 0 picks a free one). */
  port?: number
  /** Host header names accepted besides loopback (e.g. a name that resolves to this machine). */
  trustedHosts?: string[]
  /** Working directory of new sessions when the client names none (default: the launcher's cwd). */
  cwd?: string
  /** Diagnostics for a person (stderr). */
  log?: (line: string) => void
}

/** A listening host. */
export interface WebHostHandle {
  /** `http://host:port/` as a browser should open it (with `?token=` when a token is required). */
  readonly url: string
  readonly port: number
  /** The access token, when the host is bound beyond loopback; printed once by the command. */
  readonly token?: string
  /**
   * Stops accepting, closes streams, cancels pending approvals, disposes the agents of this host and
   * flushes their sessions. Idempotent. Also runs when the row is disposed.
   */
  close(): Promise<void>
}

/** The `ctx.webHost` seam. */
export abstract class WebHost extends Service {
  /** Binds and serves. Rejects with `WEB_LISTEN_FAILED` when the address cannot be bound. */
  abstract listen(options?: WebListenOptions): Promise<WebHostHandle>
}
