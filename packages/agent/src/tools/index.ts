// @dsh/agent/tools: the tool seam `ctx.tools`. A scoped registry (global and per-agent layers), guards,
// the guarded per-call pipeline (pipeline.ts) and the scheduler for a model's batch of calls
// (scheduler.ts). Approval is consumed through the optional `ctx.approval` service (@dsh/agent/approval).

import { agentScopeOf, type Context, deepFreeze, directService, eventsOf, HarnessError, Service } from '@dsh/kernel'
import type { ToolCallBlock, ToolSchema } from '@dsh/llm'
import type {} from '../approval/index.js'
import type { ToolDefinition } from './define.js'
import { abortedBeforeDispatch, gate, type PipelineDeps, runBody } from './pipeline.js'
import { namedExactly, permittedAll } from './restriction.js'
import { type ExecuteCallsOptions, executeCalls } from './scheduler.js'
import type {
  ToolCallInput,
  ToolCallOptions,
  ToolExecution,
  ToolGuard,
  ToolOutcome,
  ToolPreExecuteDecision,
  ToolResult,
  ToolScope,
} from './types.js'

declare module 'cordis' {
  interface Context {
    tools: ToolsService
  }
  interface Events {
    /**
     * The policy layer, in call order, before guards. Return `next()` to defer, or a decision: allow
     * (optionally with rewritten args, validated again), deny with a reason, or ask (goes to
     * `ctx.approval`; without it, a denial). The innermost default is allow. A throwing listener denies.
     */
    'tools/pre-execute'(
      call: ToolCallInput,
      next: () => Promise<ToolPreExecuteDecision>,
    ): ToolPreExecuteDecision | Promise<ToolPreExecuteDecision>
    /**
     * Around the body (timeouts, metrics, retries). Return `next()` or a replacement outcome; call
     * `execution.link(signal)` before `next()` to add an abort source. The body's signal always follows
     * the caller's, whatever a wrapper does.
     */
    'tools/execute'(execution: ToolExecution, next: () => Promise<ToolOutcome>): ToolOutcome | Promise<ToolOutcome>
    /** After the body (spill, redaction, extra context): `next()` gives the outcome; return a new one. */
    'tools/post-execute'(execution: ToolExecution, next: () => Promise<ToolOutcome>): ToolOutcome | Promise<ToolOutcome>
    /** A call's final, frozen result, as soon as it is final (completion order; commit order is `onResult`). */
    'tools/result'(result: ToolResult): void
  }
}

export interface ToolsConfig {
  /** Default bound of the parallel-safe pool. Default 4. */
  concurrency?: number
}

/**
 * Where a registration lives: global, or one agent's own layer. Without a layer, a registration made
 * from an agent's composition context (a preset's rows, see `AGENT_SCOPE`) goes to that agent's layer.
 */
export type ToolLayer = { agentId?: string }

interface Entry {
  tool: ToolDefinition
  /** The registering plugin's fiber. */
  owner?: unknown
}

function checkConcurrency(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new HarnessError('INVALID_CONCURRENCY', `${where}: concurrency must be an integer >= 1`, {
      value: String(value),
    })
  }
  return value
}

function layerKey(agentId: string | undefined): string {
  return agentId === undefined ? 'global' : `agent:${agentId}`
}

export class ToolsService extends Service {
  static readonly provide = 'tools'
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly layers = new Map<string, Map<string, Entry>>()
  private readonly guardList: { name: string; guard: ToolGuard }[] = []
  private readonly concurrency: number
  /** Per-call paths read these, not Cordis's per-access proxies (decision 351). */
  private readonly bus: Context['events']
  private readonly approval: () => Context['approval'] | undefined
  /** `version` is bumped by every registration and removal: cached schema lists of older ones are stale. */
  private readonly listed = {
    version: 0,
    lists: new Map<string, { version: number; schemas: readonly ToolSchema[] }>(),
  }

  constructor(ctx: Context, config: ToolsConfig = {}) {
    const concurrency = checkConcurrency(config?.concurrency ?? 4, 'tools config')
    super(ctx, 'tools')
    this.concurrency = concurrency
    this.bus = eventsOf(ctx)
    this.approval = directService(ctx, 'approval')
  }

  /**
   * Registers a tool in a layer for the lifetime of the calling plugin (register on an agent's own
   * context and the tool dies with the agent). Throws `DUPLICATE_TOOL` when the layer already has the
   * name; `INVALID_TOOL_DEFINITION` when `tool` did not come from `defineTool`.
   */
  register(tool: ToolDefinition<never>, layer?: ToolLayer): () => void {
    const definition = tool as unknown as ToolDefinition
    if (typeof definition?.validate !== 'function' || !Object.isFrozen(definition)) {
      throw new HarnessError('INVALID_TOOL_DEFINITION', 'register() takes a tool made by defineTool()', {
        name: String(definition?.name),
      })
    }
    const key = layerKey(layer?.agentId ?? agentScopeOf(this.ctx))
    return this.ctx.effect(() => {
      const entries = this.layers.get(key) ?? new Map<string, Entry>()
      if (entries.has(definition.name)) {
        throw new HarnessError('DUPLICATE_TOOL', `tool "${definition.name}" is already registered in layer ${key}`, {
          name: definition.name,
          layer: key,
        })
      }
      this.layers.set(key, entries)
      const entry: Entry = { tool: definition, owner: this.ctx.fiber }
      entries.set(definition.name, entry)
      this.listed.version++
      return () => {
        if (entries.get(definition.name) === entry) entries.delete(definition.name)
        if (entries.size === 0 && this.layers.get(key) === entries) this.layers.delete(key)
        this.listed.version++
      }
    }, `tools.register(${definition.name}@${key})`)
  }

  /**
   * Registers a monotonic guard for the lifetime of the calling plugin. Guards run in registration
   * order after `tools/pre-execute` allowed or asked; each may deny, none can allow. A throwing guard
   * denies. Throws `DUPLICATE_GUARD` for a name already in use.
   */
  guard(name: string, guard: ToolGuard): () => void {
    return this.ctx.effect(() => {
      if (this.guardList.some((entry) => entry.name === name)) {
        throw new HarnessError('DUPLICATE_GUARD', `tool guard "${name}" is already registered`, { name })
      }
      const entry = { name, guard }
      this.guardList.push(entry)
      return () => {
        const index = this.guardList.indexOf(entry)
        if (index >= 0) this.guardList.splice(index, 1)
      }
    }, `tools.guard(${name})`)
  }

  /** The Cordis fiber that registered the tool a scope sees under `name` (to name its composition row). */
  ownerOf(name: string, scope: ToolScope = {}): unknown {
    for (const { key } of this.scopeKeys(scope)) {
      const entry = this.layers.get(key)?.get(name)
      if (entry) return entry.owner
    }
    return undefined
  }

  /**
   * The tool a scope sees under `name`: its agent layer first, then global (the agent's own tool
   * shadows a global one); global tools must pass every restriction of the scope.
   */
  get(name: string, scope: ToolScope = {}): ToolDefinition | undefined {
    for (const { key, filtered } of this.scopeKeys(scope)) {
      if (filtered && !permittedAll(name, scope.restrictions)) continue
      const entry = this.layers.get(key)?.get(name)
      if (entry && filtered && entry.tool.optIn && !namedExactly(name, scope.restrictions)) continue
      if (entry) return entry.tool
    }
    return undefined
  }

  /** Every tool a scope sees (after shadowing and restriction), sorted by name. */
  tools(scope: ToolScope = {}): ToolDefinition[] {
    const seen = new Map<string, ToolDefinition>()
    for (const { key, filtered } of this.scopeKeys(scope)) {
      for (const [name, entry] of this.layers.get(key) ?? []) {
        if (seen.has(name) || (filtered && !permittedAll(name, scope.restrictions))) continue
        if (filtered && entry.tool.optIn && !namedExactly(name, scope.restrictions)) continue
        seen.set(name, entry.tool)
      }
    }
    return [...seen.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /**
   * The model-facing schemas of a scope, sorted by name (deterministic request headers): one deep-frozen
   * list per scope and registration version, so an unchanged tool set is the same list (callers may
   * cache what they derive from it by identity).
   */
  list(scope: ToolScope = {}): readonly ToolSchema[] {
    const build = () => deepFreeze(this.tools(scope).map((tool) => structuredClone(tool.schema) as ToolSchema))
    const { version, lists } = this.listed
    const key = `${scope.agentId ?? ''}\u0000${JSON.stringify(scope.restrictions ?? [])}`
    const cached = lists.get(key)
    if (cached?.version === version) return cached.schemas
    const schemas = build()
    if (lists.size >= 64) lists.clear() // one entry per agent scope: keep it bounded
    lists.set(key, { version, schemas })
    return schemas
  }

  /**
   * Runs one call through the whole pipeline without scheduling (no pool, no hooks). Never throws for
   * model-recoverable failures: those are `isError` results.
   */
  async executeCall(call: ToolCallBlock, options: ToolCallOptions): Promise<ToolResult> {
    const deps = this.deps(options)
    const tool = this.get(call.name, options)
    const gated = await gate(deps, call, tool, options)
    if (gated.kind === 'done') return gated.result
    if (options.signal.aborted) return abortedBeforeDispatch(deps, call, tool)
    return runBody(deps, gated, options)
  }

  /**
   * Runs a model's tool calls (see scheduler.ts for ordering, abort and failure rules) and resolves with
   * one result per call, in call order. Throws only for a scheduler failure (a hook in `options`
   * threw), after draining started calls, or `INVALID_CONCURRENCY` before starting anything.
   */
  async executeCalls(calls: readonly ToolCallBlock[], options: ExecuteCallsOptions): Promise<ToolResult[]> {
    const concurrency = checkConcurrency(options.concurrency ?? this.concurrency, 'executeCalls')
    return executeCalls(this.deps(options), (name) => this.get(name, options), calls, options, concurrency)
  }

  /**
   * Whether a scope's restrictions hide a tool it would otherwise see (the pipeline says "not available
   * to this agent" instead of "unknown tool" for a forced call of it).
   */
  restricted(name: string, scope: ToolScope): boolean {
    return this.get(name, scope) === undefined && this.get(name, { agentId: scope.agentId }) !== undefined
  }

  /** The layers a scope sees, narrowest first; only the agent's own layer escapes its restrictions. */
  private scopeKeys(scope: ToolScope): { key: string; filtered: boolean }[] {
    const keys: { key: string; filtered: boolean }[] = []
    if (scope.agentId !== undefined) keys.push({ key: `agent:${scope.agentId}`, filtered: false })
    keys.push({ key: 'global', filtered: true })
    return keys
  }

  private deps(scope: ToolScope): PipelineDeps {
    // `this.ctx` is the caller's context here: hooks dispatch through it.
    const ctx = this.ctx
    return {
      ctx,
      events: this.bus,
      guards: () => [...this.guardList],
      // The direct reader already looks the service up through `ctx`: no second lookup when it is absent.
      approval: this.approval,
      available: () => this.tools(scope).map((tool) => tool.name),
      restricted: (name) => this.restricted(name, scope),
    }
  }
}

export default ToolsService

export type {
  ToolBodyReturn,
  ToolCallContext,
  ToolDefinition,
  ToolLocation,
  ToolMode,
  ToolParameters,
  ToolPresentation,
  ToolSpec,
} from './define.js'
export { defineTool, ToolError } from './define.js'
export { presentationOf } from './pipeline.js'
export { matchesToolPattern, namedExactly, permitted, permittedAll } from './restriction.js'
export type { ExecuteCallsOptions } from './scheduler.js'
export type {
  ToolCallInput,
  ToolCallOptions,
  ToolDispatch,
  ToolExecution,
  ToolGuard,
  ToolGuardVerdict,
  ToolOutcome,
  ToolPreExecuteDecision,
  ToolRestriction,
  ToolResult,
  ToolScope,
} from './types.js'
export { toToolResultMessage } from './types.js'
