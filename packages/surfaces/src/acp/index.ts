// @dsh/surfaces/acp: the `ctx.acp` seam. A surface (the `dsh acp` command) hands it a stream pair and
// it serves the Agent Client Protocol (v1, via @agentclientprotocol/sdk) on them as an agent; the
// provider row `@dsh/surfaces/acp/agent` does the work through `ctx.agents` and `ctx.sessions`.
import { Service } from '@dsh/kernel'

declare module 'cordis' {
  interface Context {
    acp: AcpServer
  }
}

export interface AcpServeOptions {
  /** Where the editor's messages arrive (newline-delimited JSON). */
  input: NodeJS.ReadableStream
  /** Where ACP messages go. Nothing else is ever written to it. */
  output: NodeJS.WritableStream
  /** Diagnostics for a person (stderr); never protocol. */
  log?: (line: string) => void
}

/** One editor served on one stream pair. */
export interface AcpConnection {
  /**
   * Resolves once the connection is torn down (the input ended or `close()` was called): its
   * prompts are settled, its agents disposed and its sessions flushed and closed.
   */
  readonly closed: Promise<void>
  /** Tears the connection down (idempotent). */
  close(): Promise<void>
}

/** The `ctx.acp` seam. */
export abstract class AcpServer extends Service {
  /** Serves one editor on `options.input` / `options.output` until the input ends. */
  abstract serve(options: AcpServeOptions): AcpConnection
}
