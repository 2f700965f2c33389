// Runs a plan step by step. Every task is one child session started through `ctx.subagents` and
// logged in the parent's session (`workflow/task-started` links the step to the child,
// `workflow/task-finished` holds its report). Tasks a previous attempt completed are not run again:
// their reports come from the log. A failed task fails the workflow after its running siblings end;
// an abort cancels every running child.
import type { Agent } from '@dsh/agent'
import type { LlmCallConfig } from '@dsh/llm'
import type { SessionEventMap } from '@dsh/session'
import { type SubagentReport, type SubagentRequest, type SubagentsService, worktreeNote } from '../subagents/index.js'
import type { WorkflowOutcome } from './fold.js'
import { gather, itemsOf, render, taskKey, type WorkflowPlan, type WorkflowStep } from './plan.js'

export interface WorkflowResult {
  workflowId: string
  outcome: WorkflowOutcome
  /** The last step's report when completed. */
  text: string
  message?: string
}

export interface EngineDeps {
  subagents: SubagentsService
  /** Appends to the parent's log while it is live in this process. */
  log<T extends keyof SessionEventMap>(type: T, data: SessionEventMap[T]): void
  defaultConcurrency: number
}

interface Task {
  step: WorkflowStep
  index?: number
  item?: string
  prompt: string
}

class StepFailed extends Error {
  constructor(
    readonly outcome: WorkflowOutcome,
    message: string,
  ) {
    super(message)
  }
}

/** `provider:model` or `model` into the child's model override. */
export function modelOverride(value: string | undefined): Partial<LlmCallConfig> | undefined {
  if (!value) return undefined
  const colon = value.indexOf(':')
  return colon > 0 ? { provider: value.slice(0, colon), model: value.slice(colon + 1) } : { model: value }
}

async function runTask(
  deps: EngineDeps,
  parent: Agent,
  workflowId: string,
  task: Task,
  signal: AbortSignal,
): Promise<SubagentReport> {
  const { step } = task
  const key = taskKey(step.id, task.index)
  const model = modelOverride(step.model)
  const request: SubagentRequest = {
    parent,
    prompt: task.prompt,
    signal,
    description: step.description ?? (task.item === undefined ? step.id : `${step.id}: ${task.item}`),
    ...(step.provider !== undefined ? { provider: step.provider } : {}),
    ...(step.preset !== undefined ? { preset: step.preset } : {}),
    ...(model ? { model } : {}),
    ...(step.tools !== undefined ? { tools: { allow: step.tools } } : {}),
    ...(step.isolation === 'worktree' ? { isolation: 'worktree' as const } : {}),
  }
  const handle = await deps.subagents.start(request)
  try {
    deps.log('workflow/task-started', {
      workflowId,
      step: step.id,
      ...(task.index !== undefined ? { index: task.index } : {}),
      ...(task.item !== undefined ? { item: task.item } : {}),
      subagentId: handle.id,
      childSession: handle.childSession,
    })
    const report = await handle.result
    // The step's report (and every later prompt that quotes it) says where its work is.
    if (report.worktree && !report.worktree.removed) report.text = `${report.text}\n${worktreeNote(report.worktree)}`
    deps.log('workflow/task-finished', {
      workflowId,
      step: step.id,
      ...(task.index !== undefined ? { index: task.index } : {}),
      subagentId: handle.id,
      outcome: report.outcome,
      text: report.text,
      ...(report.message !== undefined ? { message: report.message } : {}),
    })
    if (report.outcome !== 'completed') {
      throw new StepFailed(
        report.outcome === 'cancelled' ? 'cancelled' : 'failed',
        `task ${key} ${report.outcome}${report.message ? `: ${report.message}` : ''} (child session ${report.childSession})`,
      )
    }
    return report
  } finally {
    await handle.dispose()
  }
}

/** Runs `tasks` with at most `limit` at once; the first failure stops new starts, running ones finish. */
async function pool(tasks: Array<() => Promise<string>>, limit: number): Promise<string[]> {
  const results: string[] = new Array(tasks.length)
  let next = 0
  let failure: unknown
  const worker = async () => {
    while (failure === undefined && next < tasks.length) {
      const index = next++
      try {
        results[index] = await (tasks[index] as () => Promise<string>)()
      } catch (error) {
        failure ??= error
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker))
  if (failure !== undefined) throw failure
  return results
}

/**
 * Runs the plan. `completed` holds the reports of tasks an earlier attempt finished (by task key); those
 * are reused, never re-run. Never rejects for a task's failure: that is the result's outcome.
 */
export async function runPlan(
  deps: EngineDeps,
  parent: Agent,
  workflowId: string,
  plan: WorkflowPlan,
  completed: ReadonlyMap<string, string>,
  signal: AbortSignal,
): Promise<WorkflowResult> {
  const results = new Map<string, string>()
  const attempt = async (task: Task): Promise<string> => {
    const saved = completed.get(taskKey(task.step.id, task.index))
    if (saved !== undefined) return saved
    if (signal.aborted) throw new StepFailed('cancelled', 'the workflow was cancelled')
    return (await runTask(deps, parent, workflowId, task, signal)).text
  }
  try {
    for (const step of plan.steps) {
      const items = itemsOf(step, results)
      if (items === undefined) {
        results.set(step.id, await attempt({ step, prompt: render(step.prompt, results) }))
        continue
      }
      if (items.length === 0) throw new StepFailed('failed', `step ${step.id} fans out over an empty list`)
      const limit = step.concurrency ?? plan.concurrency ?? deps.defaultConcurrency
      const texts = await pool(
        items.map((item, index) => () => attempt({ step, index, item, prompt: render(step.prompt, results, item) })),
        limit,
      )
      results.set(step.id, gather(items, texts))
    }
  } catch (error) {
    const outcome: WorkflowOutcome = signal.aborted
      ? 'cancelled'
      : error instanceof StepFailed
        ? error.outcome
        : 'failed'
    return { workflowId, outcome, text: '', message: error instanceof Error ? error.message : String(error) }
  }
  const last = plan.steps.at(-1) as WorkflowStep
  return { workflowId, outcome: 'completed', text: results.get(last.id) ?? '' }
}
