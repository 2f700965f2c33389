// The scheduler: runs one assistant message's tool calls. Policy (the gate) and commits advance in the
// model's call order; only bodies overlap. An `exclusive` call is a barrier (everything before it has
// finished, nothing after it starts until it has); `parallel-safe` calls share a bounded rolling pool.
// A call's mode is read when the scheduler reaches it, so a registry change takes effect at once.
// Abort: nothing new starts, started calls drain and keep their real results, the rest get
// `ABORTED_BEFORE_DISPATCH`. A hook failure (onDispatch, beforeBody, onResult): started calls drain,
// what can be committed is, then the first error is thrown; no result is invented for the rest.
import type { ToolCallBlock } from '@dsh/llm'
import type { ToolDefinition } from './define.js'
import { abortedBeforeDispatch, gate, type PipelineDeps, presentationOf, runBody } from './pipeline.js'
import type { ToolCallOptions, ToolDispatch, ToolResult } from './types.js'

export interface ExecuteCallsOptions extends ToolCallOptions {
  /** Bodies of parallel-safe calls running at once. Default: the service's `concurrency` config (4). */
  concurrency?: number
  /**
   * Called in call order as each call is taken up, before its gate (the loop appends `tool/call`).
   * Not called for calls that never start (abort); their results have `bodyInvoked: false`.
   */
  onDispatch?(dispatch: ToolDispatch): void | Promise<void>
  /**
   * Called in call order right before a call's body stage, after policy and approval allowed it (the
   * loop's checkpoint barrier). Throw to block: that is a scheduler failure.
   */
  beforeBody?(dispatch: ToolDispatch): void | Promise<void>
  /**
   * Called once per result, strictly in call order, each awaited before the next (the loop appends
   * `tool/result`). Also called for `ABORTED_BEFORE_DISPATCH` results.
   */
  onResult?(result: ToolResult, index: number): void | Promise<void>
}

/** Resolves a tool name in the caller's scope (at the moment the scheduler reaches the call). */
export type ToolLookup = (name: string) => ToolDefinition | undefined

export async function executeCalls(
  deps: PipelineDeps,
  lookup: ToolLookup,
  calls: readonly ToolCallBlock[],
  options: ExecuteCallsOptions,
  concurrency: number,
): Promise<ToolResult[]> {
  const { signal } = options
  const results: (ToolResult | undefined)[] = new Array(calls.length).fill(undefined)
  const inFlight = new Set<Promise<void>>()
  let failure: { error: unknown } | undefined
  let commitBroken = false
  let committed = 0
  let commits: Promise<void> = Promise.resolve()

  const fail = (error: unknown) => {
    failure ??= { error }
  }
  // Commits every result that is ready and next in order; serialised on one promise chain.
  const pump = () => {
    commits = commits.then(async () => {
      while (!commitBroken && committed < calls.length) {
        const result = results[committed]
        if (!result) return
        try {
          await options.onResult?.(result, committed)
        } catch (error) {
          commitBroken = true
          fail(error)
          return
        }
        committed++
      }
    })
  }
  const settle = (index: number, result: ToolResult) => {
    results[index] = result
    pump()
  }
  const drain = async () => {
    while (inFlight.size > 0) await Promise.race(inFlight)
  }
  const stopped = () => failure !== undefined || signal.aborted

  // Takes up one call: wait for its turn, policy, checkpoint, then start its body.
  const takeUp = async (index: number, call: ToolCallBlock): Promise<void> => {
    const tool = lookup(call.name)
    if (tool?.mode === 'exclusive') await drain()
    else if (tool) while (inFlight.size >= concurrency) await Promise.race(inFlight)
    if (stopped()) return
    const dispatch: ToolDispatch = Object.freeze({
      index,
      call,
      mode: tool?.mode,
      readOnly: tool?.readOnly === true,
      presentation: presentationOf(tool, call.name, call.arguments),
    })
    await options.onDispatch?.(dispatch)
    const gated = await gate(deps, call, tool, options)
    if (gated.kind === 'done') return settle(index, gated.result)
    // The gate may have waited (approval): re-check before anything runs, and again after the checkpoint.
    if (signal.aborted) return settle(index, abortedBeforeDispatch(deps, call, tool))
    await options.beforeBody?.(dispatch)
    if (signal.aborted) return settle(index, abortedBeforeDispatch(deps, call, tool))
    const task: Promise<void> = runBody(deps, gated, options).then(
      (result) => settle(index, result),
      (error) => fail(error),
    )
    inFlight.add(task)
    void task.finally(() => inFlight.delete(task))
    if (gated.tool.mode === 'exclusive') await drain()
  }

  for (let index = 0; index < calls.length && !stopped(); index++) {
    try {
      await takeUp(index, calls[index] as ToolCallBlock)
    } catch (error) {
      // A hook (or a bug) failed: stop taking up calls; started ones still drain below.
      fail(error)
    }
  }

  await drain()
  if (!failure) {
    for (let index = 0; index < calls.length; index++) {
      if (!results[index]) {
        const call = calls[index] as ToolCallBlock
        results[index] = abortedBeforeDispatch(deps, call, lookup(call.name))
      }
    }
  }
  pump()
  await commits
  if (failure) throw failure.error
  return results as ToolResult[]
}
