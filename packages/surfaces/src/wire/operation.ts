// The shape of one entry of the wire table (`./operations.ts`): what a wire hands a handler, where
// the web serves it, and why an operation is off a wire.
import type { Agent } from '@dsh/agent'
import type { Context } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import type { SessionHost } from '../host/index.js'
import type { FromSchema, JsonSchema } from './schema.js'
import type { ClientModuleEntry, ModelRoute } from './types.js'

/** What a wire hands a handler besides the host: the few things the wires do differently. */
export interface WireScope {
  readonly ctx: Context
  readonly wire: 'rpc' | 'web'
  /**
   * The working directory a call names, resolved or refused the wire's way: RPC resolves a relative
   * path against the connection's cwd; the web requires an absolute existing directory and lets only
   * loopback clients leave the host's own. `undefined` is the wire's default (the web requires one
   * to `create` in).
   */
  cwd(cwd: string | undefined, use: 'create' | 'read'): string
  /** The model routing of a session the call attaches (the wire's defaults under the call's). */
  model(route: ModelRoute): Partial<LlmCallConfig>
  /**
   * The client may be on another machine (the browser): attachments are bytes, never paths; a prompt
   * whose text is a registered /command runs it; a detached session is resumed on first use.
   */
  readonly remote: boolean
  /** The client connects from this machine. */
  readonly loopback: boolean
  /** What a cancelled turn logs as its reason. */
  readonly cancelReason: string
  /** Called with every agent a call attached (RPC reports its status at once). */
  attached?(agent: Agent): void
  /** The page's extras (web only): client modules and credential names to offer. */
  readonly page?: { clientModules(): ClientModuleEntry[]; credentialNames: readonly string[] }
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'

/** Where the web serves an operation. `:name` segments fill the param of that name; GET params come from the query. */
export interface WebRoute {
  method: HttpMethod
  path: string
  /** Bodies up to 32 MiB (prompts carry base64 attachments) instead of 1 MiB. */
  largeBody?: boolean
  /** The result is a `WireFile`, served as a download. */
  file?: boolean
}

/** An operation off one wire, and why. */
export interface OffWire {
  off: string
}

export interface Operation<
  P extends JsonSchema = JsonSchema,
  R = unknown,
  Rpc extends true | OffWire = true | OffWire,
  Web extends WebRoute | OffWire = WebRoute | OffWire,
> {
  summary: string
  params: P
  /** HarnessError codes the operation answers besides INVALID_PARAMS (stable; clients branch on them). */
  errors: readonly string[]
  rpc: Rpc
  web: Web
  handler(host: SessionHost, params: FromSchema<P>, scope: WireScope): R | Promise<R>
}

/** Types the handler by its schema. */
export function op<
  const P extends JsonSchema,
  R,
  const Rpc extends true | OffWire,
  const Web extends WebRoute | OffWire,
>(operation: Operation<P, R, Rpc, Web>): Operation<P, R, Rpc, Web> {
  return operation
}
