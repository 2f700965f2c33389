// Tool definitions: `defineTool` checks a tool at load (name, description, body, object schema,
// execution mode) and freezes it; its JSON Schema is compiled with Ajv on first use (decision 261).
// Also the types a tool body sees and returns.

import { createRequire } from 'node:module'
import { deepFreeze, HarnessError, type JsonValue } from '@dsh/kernel'
import type { ToolResultContent, ToolSchema } from '@dsh/llm'
import type { Ajv as AjvClass, ErrorObject } from 'ajv'

/** `exclusive` (the default) runs alone, a barrier; `parallel-safe` may overlap other parallel-safe calls. */
export type ToolMode = 'exclusive' | 'parallel-safe'

/** A place a call touches, for surfaces to link (a file and optionally a line). */
export interface ToolLocation {
  path: string
  line?: number
}

/**
 * How surfaces render a call (pending card, approval prompt). A pure function of the arguments, so
 * replaying a logged call re-renders it identically. `generic`: title and optional subtitle;
 * `terminal`: a command line; `diff`: a file change (`before`/`after` text when known from args).
 */
export type ToolPresentation =
  | { kind: 'generic'; title: string; subtitle?: string; locations?: ToolLocation[] }
  | { kind: 'terminal'; title: string; command: string; cwd?: string; locations?: ToolLocation[] }
  | { kind: 'diff'; title: string; path: string; before?: string; after?: string; locations?: ToolLocation[] }

/** What a tool body receives besides its arguments. The agent loop fills it; keep it small. */
export interface ToolCallContext {
  /** The model's tool-call id. */
  readonly callId: string
  readonly toolName: string
  readonly sessionId?: string
  readonly agentId?: string
  /**
   * Aborts when the caller's signal aborts (turn cancelled, agent disposed) or when a `tools/execute`
   * wrapper's linked signal (e.g. a timeout) aborts. Bodies should stop promptly and may still return
   * a partial result, which is kept.
   */
  readonly signal: AbortSignal
}

/** A body may return text, content blocks, or a full result with `isError` and UI-only `details`. */
export type ToolBodyReturn =
  | string
  | ToolResultContent[]
  | { content: string | ToolResultContent[]; isError?: boolean; details?: JsonValue }

/** The JSON Schema of a tool's arguments: an object schema (what model APIs accept). */
export type ToolParameters = { type: 'object' } & Record<string, unknown>

export interface ToolSpec<Args = Record<string, unknown>> {
  /** `^[A-Za-z0-9_-]{1,64}$` (what every model API accepts). */
  name: string
  /** Model-facing prose: what the tool does and when to use it. */
  description: string
  parameters: ToolParameters
  /**
   * The body. `args` are schema-valid and deep-frozen. Throw `ToolError` for a failure the model should
   * read as is; any other throw becomes a `TOOL_FAILED` error result (or `ABORTED` when the signal fired).
   */
  execute(args: Args, call: ToolCallContext): ToolBodyReturn | Promise<ToolBodyReturn>
  presentation?: (args: Args) => ToolPresentation
  /** Default `exclusive`. */
  mode?: ToolMode
  /**
   * The body changes nothing outside the session log (no file, process, or remote state): no
   * durability barrier (sync) is needed before it. Absent means it may have side effects.
   */
  readOnly?: boolean
  /**
   * Rarely needed: when tool search is on (`@dsh/agent/tool-search`, the `tools.search` setting) its
   * schema is not sent up front; the model finds it with `tool_search`, which loads it for the rest of
   * the session. MCP tools are deferred; absent means the tool is always sent.
   */
  deferred?: boolean
  /**
   * A tool for one job (review's `report_finding`): offered only in a scope whose restrictions name it
   * exactly in an `allow` list (a preset made for the job), never through "every tool" or a glob.
   */
  optIn?: boolean
  /**
   * The last word on the content of every result of this tool (success or error, after
   * `tools/post-execute`). Content only: it cannot change `isError` or anything else.
   */
  finalizeContent?: (content: readonly ToolResultContent[], info: { isError: boolean }) => ToolResultContent[]
}

/** A checked, frozen tool. Create with `defineTool`; register with `ctx.tools.register`. */
export interface ToolDefinition<Args = Record<string, unknown>>
  extends Readonly<Omit<ToolSpec<Args>, 'mode' | 'readOnly' | 'deferred'>> {
  readonly mode: ToolMode
  readonly readOnly: boolean
  readonly deferred: boolean
  /** What the model sees. */
  readonly schema: Readonly<ToolSchema>
  /**
   * Schema errors as readable lines (`/path must be string`), or `undefined` when `args` is valid.
   * Throws `INVALID_TOOL_DEFINITION` when the tool's own schema does not compile (see `compile`).
   */
  validate(args: unknown): string[] | undefined
  /**
   * Compiles the schema now (it is otherwise compiled on the first `validate`); throws
   * `INVALID_TOOL_DEFINITION` when it does not compile. `dsh check` calls it for every registered tool.
   */
  compile(): void
}

/**
 * A failure the model should read verbatim ("File not found: src/x.ts. Did you mean src/y.ts?").
 * `code` is recorded on the result (default `TOOL_ERROR`).
 */
export class ToolError extends Error {
  override readonly name = 'ToolError'
  readonly code: string
  constructor(message: string, code = 'TOOL_ERROR') {
    super(message)
    this.code = code
  }
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/

// One shared compiler (a fresh Ajv costs ~40 ms per tool). It holds no tool state between calls:
// every compiled schema is removed from its cache right away (see docs/decisions/0005-tools-and-approval.md).
// Formats are annotations only (no ajv-formats); `$id`s must be unique within one schema.
let compiler: AjvClass | undefined
// Loaded with the first compile, not with this module: most processes compile a schema only once a
// model calls a tool.
const loadAjv = (): typeof import('ajv') => createRequire(import.meta.url)('ajv')

function formatAjvError(error: ErrorObject): string {
  const at = error.instancePath || '(root)'
  const params = error.params as Record<string, unknown>
  if (error.keyword === 'additionalProperties') return `${at} must not have the property "${params.additionalProperty}"`
  if (error.keyword === 'enum') return `${at} must be one of ${JSON.stringify(params.allowedValues)}`
  return `${at} ${error.message ?? 'is invalid'}`
}

/**
 * Checks and freezes a tool. Throws `INVALID_TOOL_DEFINITION` at load for a bad name, a missing
 * description or body, a `parameters` schema that is not an object schema, or an unknown mode. The
 * schema is compiled once, on first use: compiling every tool at start-up cost ~100 ms before the first
 * model request, for tools most turns never call.
 */
export function defineTool<Args = Record<string, unknown>>(spec: ToolSpec<Args>): ToolDefinition<Args> {
  const fail = (why: string, facts: Record<string, unknown> = {}): never => {
    throw new HarnessError('INVALID_TOOL_DEFINITION', `tool ${JSON.stringify(spec?.name)}: ${why}`, {
      name: spec?.name,
      ...facts,
    })
  }
  if (typeof spec?.name !== 'string' || !NAME.test(spec.name)) fail('name must match ^[A-Za-z0-9_-]{1,64}$')
  if (typeof spec.description !== 'string' || spec.description.trim() === '') fail('description is required')
  if (typeof spec.execute !== 'function') fail('execute must be a function')
  const mode = spec.mode ?? 'exclusive'
  if (mode !== 'exclusive' && mode !== 'parallel-safe') fail('mode must be "exclusive" or "parallel-safe"', { mode })
  const parameters = spec.parameters
  if (!parameters || typeof parameters !== 'object' || parameters.type !== 'object') {
    fail('parameters must be a JSON Schema with type "object"')
  }
  let check: ReturnType<AjvClass['compile']> | undefined
  const source = structuredClone(parameters)
  const compile = (): ReturnType<AjvClass['compile']> => {
    if (check) return check
    // No meta-schema pass (it cost ~170 ms on the first compile): Ajv's strict mode and keyword
    // checks still reject an unknown type, an unknown keyword or a keyword value of the wrong type.
    compiler ??= new (loadAjv().Ajv)({ allErrors: true, validateFormats: false, validateSchema: false })
    try {
      check = compiler.compile(source)
      return check
    } catch (error) {
      return fail(`parameters do not compile: ${(error as Error).message}`)
    } finally {
      // The compiled function is self-contained; dropping the schema keeps the compiler stateless.
      compiler.removeSchema(source)
    }
  }
  const schema = deepFreeze({
    name: spec.name,
    description: spec.description,
    parameters: structuredClone(parameters) as Record<string, unknown>,
  })
  return Object.freeze({
    ...spec,
    mode,
    readOnly: spec.readOnly === true,
    deferred: spec.deferred === true,
    schema,
    parameters: schema.parameters as ToolParameters,
    validate(args: unknown): string[] | undefined {
      const valid = compile()
      if (valid(args)) return undefined
      return (valid.errors ?? []).map(formatAjvError)
    },
    compile(): void {
      compile()
    },
  })
}
