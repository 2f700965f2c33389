// The data that flows through the tool pipeline and scheduler: call inputs, hook payloads, results.
import type { JsonValue } from '@dsh/kernel'
import type { ToolCallBlock, ToolResultContent, ToolResultMessage } from '@dsh/llm'
import type { ToolMode, ToolPresentation } from './define.js'

/** Which registry layers a caller sees: global, plus its agent's own layer. */
export interface ToolScope {
  agentId?: string
  /**
   * Narrow the global layer (an agent's preset policy, a subagent's filter): a global tool must pass
   * each of them. The agent's own registrations are never filtered.
   */
  restrictions?: readonly ToolRestriction[]
  /** The agent's preset name, passed on to policies as `ToolCallInput.preset` (informational). */
  preset?: string
}

/**
 * Tool names or globs (`*`, `?`): a tool must match an `allow` entry (when `allow` is given) and no
 * `deny` entry.
 */
export interface ToolRestriction {
  allow?: readonly string[]
  deny?: readonly string[]
}

/** Options of one call (and of a batch). The agent loop fills them per step. */
export interface ToolCallOptions extends ToolScope {
  /** The caller's cancellation; every body receives a signal that aborts when this one does. */
  signal: AbortSignal
  sessionId?: string
}

/** A call as policies see it (`tools/pre-execute`, guards): deep-frozen, identity included. */
export interface ToolCallInput {
  readonly callId: string
  readonly toolName: string
  /** Schema-valid, deep-frozen arguments. */
  readonly args: Readonly<Record<string, unknown>>
  readonly mode: ToolMode
  readonly presentation: ToolPresentation
  readonly sessionId?: string
  readonly agentId?: string
  readonly preset?: string
}

/**
 * A `tools/pre-execute` decision. `ask` goes to `ctx.approval` (a denial when no approval service is
 * installed). `allow` and `ask` may carry rewritten `args`, which are validated against the schema again.
 */
export type ToolPreExecuteDecision =
  | { action: 'allow'; args?: Record<string, unknown> }
  | { action: 'deny'; reason: string }
  | { action: 'ask'; reason?: string; summary?: string; args?: Record<string, unknown> }

/** A guard's verdict: abstain (`undefined`) or deny. There is no way to allow. */
export type ToolGuardVerdict = undefined | { deny: string }
export type ToolGuard = (call: ToolCallInput) => ToolGuardVerdict | Promise<ToolGuardVerdict>

/**
 * A call on its way to the body, as `tools/execute` and `tools/post-execute` listeners see it.
 * Frozen: a wrapper cannot swap `signal`. `link(signal)` adds a further abort source for the body (a
 * timeout); it can only add, never remove the caller's.
 */
export interface ToolExecution extends ToolCallInput {
  /** The caller's signal. */
  readonly signal: AbortSignal
  link(signal: AbortSignal): void
}

/**
 * The result of the body stage as `tools/execute` wrappers and `tools/post-execute` listeners pass it
 * along. A listener returns a new object (replace `content`, append to `additionalContext`).
 */
export interface ToolOutcome {
  content: ToolResultContent[]
  isError: boolean
  /** Stable code of an error result (see README); absent on success. */
  errorCode?: string
  /** UI-only data from the body (never shown to the model). */
  details?: JsonValue
  /** Text the loop adds to the model's context after the tool results (FIFO). */
  additionalContext: string[]
}

/** The final, deep-frozen result of one call. `toToolResultMessage` gives the model-facing message. */
export interface ToolResult {
  readonly toolCallId: string
  readonly toolName: string
  readonly content: readonly ToolResultContent[]
  readonly isError: boolean
  readonly errorCode?: string
  /** Whether the tool body was entered (distinguishes `ABORTED_BEFORE_DISPATCH` from `ABORTED`). */
  readonly bodyInvoked: boolean
  readonly additionalContext: readonly string[]
  readonly details?: JsonValue
  readonly presentation: ToolPresentation
}

/** What the scheduler hooks receive about a call it is about to run. */
export interface ToolDispatch {
  /** Position in the model's call list. */
  readonly index: number
  readonly call: Readonly<ToolCallBlock>
  /** `undefined` for an unknown tool (which still gets an error result). */
  readonly mode: ToolMode | undefined
  /** The tool declares no side effects (see `ToolSpec.readOnly`): no durability barrier before its body. */
  readonly readOnly: boolean
  readonly presentation: ToolPresentation
}

export function toToolResultMessage(result: ToolResult): ToolResultMessage {
  return {
    role: 'tool',
    toolCallId: result.toolCallId,
    toolName: result.toolName,
    content: result.content.map((block) => ({ ...block })),
    isError: result.isError,
  }
}
