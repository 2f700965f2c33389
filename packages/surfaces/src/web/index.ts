// @dsh/surfaces/web: the `ctx.webHost` seam. A surface (the `dsh web` command) asks it to listen; the
// provider row `@dsh/surfaces/web/server` serves unary JSON under /api, the downlink-only event streams
// and the browser client's build, behind the trust fence of `./trust`.
import { Service } from '@dsh/kernel'

export type * from './client-api.js'
export type * from './protocol.js'
export type { FenceOptions, FenceRequest, FenceVerdict } from './trust.js'
export { checkRequest, hostAllowed, isLoopbackAddress, isLoopbackName, sameOrigin } from './trust.js'

declare module 'cordis' {
  interface Context {
    webHost: WebHost
  }
}

export interface WebListenOptions {
  /**
   * Address to bind (default 127.0.0.1). Every state-changing request needs the access token; anything
   * but loopback makes reads need it too.
   */
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
  /** `http://host:port/?token=…` as a browser should open it (the page trades the token for a cookie). */
  readonly url: string
  readonly port: number
  /**
   * The page's access token, generated per listen and kept in memory only. Required on every request
   * that changes state (mode, settings, credentials, trust, prompts, /commands), from loopback too: a
   * tool process of this machine is on loopback as well.
   */
  readonly token: string
  /** Reads need the token too (bound beyond loopback). */
  readonly tokenForReads: boolean
  /**
   * Stops accepting, closes streams, cancels pending approvals, disposes the agents of this host and
   * flushes their sessions. Idempotent. Also runs when the row is disposed.
   */
  close(): Promise<void>
}

/** A browser-side plugin a row contributes: an ES module file (see `ClientModule` in `./client-api`). */
export interface ClientModuleSpec {
  /** Unique per host: lowercase letters, digits, `-`, `_`, `.` (the row id is a good choice). */
  id: string
  /** The module's file: an absolute path or a `file:` URL. Read once, at registration. */
  path: string | URL
}

/** The `ctx.webHost` seam. */
export abstract class WebHost extends Service {
  /** Binds and serves. Rejects with `WEB_LISTEN_FAILED` when the address cannot be bound. */
  abstract listen(options?: WebListenOptions): Promise<WebHostHandle>
  /**
   * Adds a client module to the manifest every page loads (open pages load it at once). Returns the
   * disposer that removes it (open pages unload it); call it from `ctx.effect` so disabling the row
   * does that. Throws `CLIENT_MODULE_INVALID` for a bad or taken id or an unreadable file.
   */
  abstract registerClientModule(spec: ClientModuleSpec): () => void
}
