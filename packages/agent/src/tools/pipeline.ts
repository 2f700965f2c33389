// The guarded pipeline of one tool call. Two stages, so the scheduler can keep policy in call order
// and overlap only bodies:
//   gate:  resolve + validate -> freeze args -> `tools/pre-execute` waterfall (allow / deny / ask)
//          -> monotonic guards (deny or abstain) -> approval for `ask` (allowed-once or nothing runs)
//   body:  `tools/execute` waterfall around the body (the caller's abort always reaches the body)
//          -> body -> `tools/post-execute` waterfall -> error normalisation -> `finalizeContent`
//          -> deep-freeze -> `tools/result`.
// Every failure on the way (unknown tool, bad arguments, denial, a throwing hook or body) becomes an
// `isError` result the model can read; nothing here throws for them.

import { type Context, deepFreeze, editDistance, HarnessError, toJsonSafe } from '@dsh/kernel'
import type { ToolCallBlock, ToolResultContent } from '@dsh/llm'
import type { ApprovalDecided, ApprovalDecision, ApprovalService } from '../approval/index.js'
import { type ToolBodyReturn, type ToolDefinition, ToolError, type ToolPresentation } from './define.js'
import type {
  ToolCallInput,
  ToolCallOptions,
  ToolExecution,
  ToolGuard,
  ToolOutcome,
  ToolPreExecuteDecision,
  ToolResult,
} from './types.js'

/** What the pipeline needs from the service. `ctx` is the caller's context: hooks dispatch through it. */
export interface PipelineDeps {
  readonly ctx: Context
  /** The event bus without the context proxy (decision 351): per-call hooks dispatch through it. */
  readonly events: Context['events']
  guards(): readonly { name: string; guard: ToolGuard }[]
  approval(): ApprovalService | undefined
  /** Tool names visible in the caller's scope, for "unknown tool" messages. */
  available(): string[]
  /** Whether the caller's restrictions (its preset, a subagent filter) hide a tool of that name. */
  restricted(name: string): boolean
}

export type Gated = { kind: 'done'; result: ToolResult } | { kind: 'ready'; tool: ToolDefinition; input: ToolCallInput }

const MAX_SCHEMA_CHARS = 2000
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))
const text = (value: string): ToolResultContent[] => [{ type: 'text', text: value }]
/** A reason as a clause inside our sentence: no trailing period or whitespace. */
const clause = (reason: string | undefined) => String(reason ?? '').replace(/[.\s]+$/, '')

function schemaHint(tool: ToolDefinition): string {
  const json = JSON.stringify(tool.parameters)
  return json.length > MAX_SCHEMA_CHARS ? `${json.slice(0, MAX_SCHEMA_CHARS)}...` : json
}

/** The presentation of a call; a throwing or missing `presentation` falls back to generic. */
export function presentationOf(tool: ToolDefinition | undefined, name: string, args: unknown): ToolPresentation {
  // Only schema-valid args are presented: the function may rely on its schema.
  if (tool?.presentation) {
    try {
      if (tool.validate(args) === undefined) return tool.presentation(args as Record<string, unknown>)
    } catch {
      // A presentation bug (or a schema that does not compile) must not block the call; the generic
      // card is always available.
    }
  }
  return { kind: 'generic', title: name }
}

/** One line for an approval prompt when the policy gave none. */
function summaryOf(presentation: ToolPresentation): string {
  switch (presentation.kind) {
    case 'terminal':
      return `${presentation.title}: ${presentation.command}`
    case 'diff':
      return `${presentation.title}: ${presentation.path}`
    default:
      return presentation.subtitle ? `${presentation.title}: ${presentation.subtitle}` : presentation.title
  }
}

function unknownToolMessage(name: string, available: string[]): string {
  const close = available
    .map((candidate) => ({ candidate, d: editDistance(name.toLowerCase(), candidate.toLowerCase()) }))
    .filter(({ d }) => d <= Math.max(2, Math.floor(name.length / 3)))
    .sort((x, y) => x.d - y.d)[0]
  const hint = close ? ` Did you mean "${close.candidate}"?` : ''
  const list = available.length ? `Available tools: ${available.join(', ')}.` : 'No tools are available.'
  return `Unknown tool "${name}".${hint} ${list} Call a tool by its exact name.`
}

const APPROVAL_CODES: Record<Exclude<ApprovalDecision, 'allowed-once'>, string> = {
  rejected: 'APPROVAL_REJECTED',
  cancelled: 'APPROVAL_CANCELLED',
  unavailable: 'APPROVAL_UNAVAILABLE',
}

function approvalMessage(
  name: string,
  decided: Pick<ApprovalDecided, 'decision' | 'by' | 'reason'>,
  askReason: string | undefined,
): string {
  const needs = askReason ? `it needs approval (${clause(askReason)})` : 'it needs approval'
  const because = decided.reason ? `: ${clause(decided.reason)}` : ''
  switch (decided.decision) {
    case 'rejected':
      if (decided.by === 'policy') {
        return `Tool "${name}" was not run: ${needs} and this session never asks for approval. Choose an action that does not need approval.`
      }
      return `Tool "${name}" was not run: ${decided.by === 'hook' ? 'an approval rule' : 'the user'} rejected it${because}. Do not repeat the same call; change the approach or ask the user.`
    case 'cancelled':
      return `Tool "${name}" was not run: the approval request was cancelled${because}.`
    default:
      return `Tool "${name}" was not run: ${needs} and nobody could approve it${because}. Choose an action that does not need approval, or tell the user what you need.`
  }
}

/** Builds, finalises, freezes and announces a result. Never throws. */
export function finish(
  deps: PipelineDeps,
  call: Pick<ToolCallBlock, 'id' | 'name'>,
  tool: ToolDefinition | undefined,
  presentation: ToolPresentation,
  outcome: ToolOutcome,
  bodyInvoked: boolean,
): ToolResult {
  let { content, isError, errorCode } = outcome
  if (tool?.finalizeContent) {
    try {
      content = tool.finalizeContent(content, { isError })
    } catch (error) {
      content = text(`Tool "${call.name}" produced a result that could not be finalised: ${messageOf(error)}`)
      isError = true
      errorCode = 'PIPELINE_FAILED'
    }
  }
  const result: ToolResult = deepFreeze({
    toolCallId: call.id,
    toolName: call.name,
    content: toJsonSafe(content) as unknown as ToolResultContent[],
    isError,
    ...(isError ? { errorCode: errorCode ?? 'TOOL_ERROR' } : {}),
    bodyInvoked,
    additionalContext: [...outcome.additionalContext],
    ...(outcome.details === undefined ? {} : { details: toJsonSafe(outcome.details) }),
    presentation: toJsonSafe(presentation) as unknown as ToolPresentation,
  })
  try {
    deps.events.emit('tools/result', result)
  } catch {
    // Observers cannot change or fail a finished call.
  }
  return result
}

function errorOutcome(errorCode: string, message: string): ToolOutcome {
  return { content: text(message), isError: true, errorCode, additionalContext: [] }
}

/** The result of a call that never reached its body because the caller aborted first. */
export function abortedBeforeDispatch(
  deps: PipelineDeps,
  call: ToolCallBlock,
  tool: ToolDefinition | undefined,
): ToolResult {
  const message = `Tool "${call.name}" was not run: the request was cancelled before it started.`
  return finish(
    deps,
    call,
    tool,
    presentationOf(tool, call.name, call.arguments),
    errorOutcome('ABORTED_BEFORE_DISPATCH', message),
    false,
  )
}

/** Stage one: everything before the body, in call order. Never throws. */
export async function gate(
  deps: PipelineDeps,
  call: ToolCallBlock,
  tool: ToolDefinition | undefined,
  options: ToolCallOptions,
): Promise<Gated> {
  let presentation = presentationOf(tool, call.name, call.arguments)
  const done = (code: string, message: string): Gated => ({
    kind: 'done',
    result: finish(deps, call, tool, presentation, errorOutcome(code, message), false),
  })
  if (!tool && deps.restricted(call.name)) {
    const preset = options.preset === undefined ? '' : ` (preset "${options.preset}")`
    return done(
      'TOOL_NOT_ALLOWED',
      `Tool "${call.name}" was not run: it is not available to this agent${preset}. Available tools: ${deps.available().join(', ') || 'none'}.`,
    )
  }
  if (!tool) return done('UNKNOWN_TOOL', unknownToolMessage(call.name, deps.available()))
  if (call.argumentsError !== undefined) {
    return done(
      'INVALID_ARGUMENTS',
      `The arguments for tool "${call.name}" are not valid JSON (${call.argumentsError}). ` +
        `Send one JSON object matching this JSON Schema: ${schemaHint(tool)}`,
    )
  }
  const invalid = (args: unknown, by: string): Gated | undefined => {
    let errors: string[] | undefined
    try {
      errors = tool.validate(args)
    } catch (error) {
      // The tool's own schema is broken: not the model's fault, and retrying will not help.
      return done('INVALID_TOOL_DEFINITION', HarnessError.is(error) ? error.message : String(error))
    }
    if (!errors) return undefined
    return done(
      'INVALID_ARGUMENTS',
      `Invalid arguments for tool "${call.name}"${by}: ${errors.join('; ')}. ` +
        `Call it again with arguments matching this JSON Schema: ${schemaHint(tool)}`,
    )
  }
  const bad = invalid(call.arguments, '')
  if (bad) return bad

  let input: ToolCallInput = deepFreeze({
    callId: call.id,
    toolName: call.name,
    args: structuredClone(call.arguments),
    mode: tool.mode,
    presentation,
    ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
    ...(options.agentId === undefined ? {} : { agentId: options.agentId }),
    ...(options.preset === undefined ? {} : { preset: options.preset }),
  })

  // tools/pre-execute: the policy layer. A throwing listener denies (fail closed).
  let decision: ToolPreExecuteDecision
  try {
    decision = await deps.events.waterfall('tools/pre-execute', input, async () => ({ action: 'allow' }) as const)
  } catch (error) {
    return done(
      'PIPELINE_FAILED',
      `Tool "${call.name}" was not run: a tools/pre-execute hook failed: ${messageOf(error)}`,
    )
  }
  if (decision?.action === 'deny') {
    return done('DENIED', `Tool "${call.name}" was not run: ${clause(decision.reason) || 'denied by policy'}.`)
  }
  if (decision?.action !== 'allow' && decision?.action !== 'ask') {
    return done('PIPELINE_FAILED', `Tool "${call.name}" was not run: tools/pre-execute returned no valid decision.`)
  }
  if (decision.args !== undefined) {
    const rewritten = invalid(decision.args, ' (as rewritten by a tools/pre-execute hook)')
    if (rewritten) return rewritten
    const args = structuredClone(decision.args)
    presentation = presentationOf(tool, call.name, args)
    input = deepFreeze({ ...input, args, presentation })
  }

  // Monotonic guards: each may deny; none can allow what was denied (they only run on allow/ask).
  for (const { name, guard } of deps.guards()) {
    let verdict: Awaited<ReturnType<ToolGuard>>
    try {
      verdict = await guard(input)
    } catch (error) {
      verdict = { deny: `guard "${name}" failed: ${messageOf(error)}` }
    }
    if (verdict && typeof verdict.deny === 'string') {
      return done('DENIED', `Tool "${call.name}" was not run: ${clause(verdict.deny) || 'denied by a guard'}.`)
    }
  }

  if (decision.action === 'ask') {
    const approval = deps.approval()
    if (!approval)
      return done(
        'APPROVAL_UNAVAILABLE',
        approvalMessage(
          call.name,
          { decision: 'unavailable', by: 'none', reason: 'no approval service is installed' },
          decision.reason,
        ),
      )
    let answer: ApprovalDecided
    try {
      answer = await approval.ask(
        {
          ...(input.sessionId === undefined ? {} : { sessionId: input.sessionId }),
          toolCallId: call.id,
          toolName: call.name,
          kind: 'tool',
          summary: decision.summary ?? summaryOf(input.presentation),
          ...(decision.reason === undefined ? {} : { reason: decision.reason }),
          details: toJsonSafe({ args: input.args, presentation: input.presentation }),
        },
        options.signal,
      )
    } catch (error) {
      // The audit (approval/asked or /decided) could not be recorded: fail closed.
      const failed = { decision: 'unavailable', by: 'none', reason: messageOf(error) } as const
      return done('APPROVAL_UNAVAILABLE', approvalMessage(call.name, failed, decision.reason))
    }
    if (answer.decision !== 'allowed-once') {
      return done(APPROVAL_CODES[answer.decision], approvalMessage(call.name, answer, decision.reason))
    }
  }
  return { kind: 'ready', tool, input }
}

function normalizeBody(value: ToolBodyReturn): ToolOutcome {
  if (typeof value === 'string') return { content: text(value), isError: false, additionalContext: [] }
  if (Array.isArray(value)) return { content: value, isError: false, additionalContext: [] }
  if (value && typeof value === 'object' && 'content' in value) {
    const content = typeof value.content === 'string' ? text(value.content) : value.content
    return {
      content,
      isError: value.isError === true,
      ...(value.isError === true ? { errorCode: 'TOOL_ERROR' } : {}),
      ...(value.details === undefined ? {} : { details: value.details }),
      additionalContext: [],
    }
  }
  return errorOutcome('TOOL_FAILED', 'The tool returned no result content.')
}

/** Stage two: wrappers, body, post-processing. May run concurrently with other calls. Never throws. */
export async function runBody(
  deps: PipelineDeps,
  ready: { tool: ToolDefinition; input: ToolCallInput },
  options: ToolCallOptions,
): Promise<ToolResult> {
  const { tool, input } = ready
  const call = { id: input.callId, name: input.toolName }
  const controller = new AbortController()
  const cleanups: (() => void)[] = []
  let settled = false
  const follow = (signal: AbortSignal) => {
    if (settled) return // the call is over: nothing to abort, and no listener to leak
    if (signal.aborted) return controller.abort(signal.reason)
    const onAbort = () => controller.abort(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    cleanups.push(() => signal.removeEventListener('abort', onAbort))
  }
  // Attached before any wrapper runs: no wrapper can detach the caller's cancellation from the body.
  follow(options.signal)
  const execution: ToolExecution = Object.freeze({ ...input, signal: options.signal, link: follow })
  let bodyInvoked = false

  const body = async (): Promise<ToolOutcome> => {
    bodyInvoked = true
    try {
      return normalizeBody(
        await tool.execute(input.args, {
          callId: input.callId,
          toolName: input.toolName,
          ...(input.sessionId === undefined ? {} : { sessionId: input.sessionId }),
          ...(input.agentId === undefined ? {} : { agentId: input.agentId }),
          signal: controller.signal,
        }),
      )
    } catch (error) {
      if (error instanceof ToolError) return errorOutcome(error.code, error.message)
      if (controller.signal.aborted) {
        return errorOutcome('ABORTED', `Tool "${call.name}" was cancelled while running: ${messageOf(error)}`)
      }
      return errorOutcome('TOOL_FAILED', `Tool "${call.name}" failed: ${messageOf(error)}`)
    }
  }

  let outcome: ToolOutcome
  try {
    const executed = await deps.events.waterfall('tools/execute', execution, body)
    outcome = await deps.events.waterfall('tools/post-execute', execution, async () => executed)
    if (!outcome || !Array.isArray(outcome.content)) throw new Error('a listener returned no outcome')
    outcome = { ...outcome, additionalContext: outcome.additionalContext ?? [] }
  } catch (error) {
    const where = bodyInvoked
      ? 'ran, but a tools/execute or tools/post-execute hook failed'
      : 'was not run: a tools/execute hook failed'
    outcome = errorOutcome('PIPELINE_FAILED', `Tool "${call.name}" ${where}: ${messageOf(error)}`)
  } finally {
    settled = true
    for (const cleanup of cleanups) cleanup()
  }
  return finish(deps, call, tool, input.presentation, outcome, bodyInvoked)
}
