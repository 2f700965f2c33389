// @dsh/surfaces/rpc: the `ctx.rpc` seam. A surface (the `dsh rpc` command) hands it a stream pair and
// it serves the JSON-RPC protocol of `./protocol` on them; the provider row `@dsh/surfaces/rpc/server`
// does the work through `ctx.agents`, `ctx.sessions` and the optional persistence and approval rows.
import { Service } from '@dsh/kernel'

export type * from './protocol.js'
export { RPC_PROTOCOL_VERSION, RpcErrorCode } from './protocol.js'

declare module 'cordis' {
  interface Context {
    rpc: RpcServer
  }
}

export interface RpcServeOptions {
  /** Where requests arrive (newline-delimited JSON). */
  input: NodeJS.ReadableStream
  /** Where responses and notifications go. Nothing else is ever written to it. */
  output: NodeJS.WritableStream
  /** Diagnostics for a person (stderr); never protocol. */
  log?: (line: string) => void
}

/** One client served on one stream pair. */
export interface RpcConnection {
  /**
   * Resolves once the connection is torn down: after `shutdown` was answered, or after the input
   * ended. By then its agents are disposed and its sessions flushed and closed.
   */
  readonly closed: Promise<void>
  /** Tears the connection down (idempotent): pending approvals are cancelled, agents disposed, sessions flushed. */
  close(): Promise<void>
}

/** The `ctx.rpc` seam. */
export abstract class RpcServer extends Service {
  /** Serves one client on `options.input` / `options.output` until `shutdown` or the end of the input. */
  abstract serve(options: RpcServeOptions): RpcConnection
}
