// The declarative plan of a workflow: ordered steps, each one child session (or a fan-out of one child
// per item, with a concurrency limit). A step's prompt may name earlier results with `{{steps.<id>}}`
// (a fan-out's result is every item's report under its item) and, in a fan-out, `{{item}}`. The last
// step's result is the workflow's result. Validation names every problem and how to fix it.
import { HarnessError, type JsonValue } from '@dsh/kernel'

export interface WorkflowStep {
  /** `^[a-z][a-z0-9_-]{0,39}$`, unique in the plan; later prompts refer to it as `{{steps.<id>}}`. */
  id: string
  /** The child's task. */
  prompt: string
  /** Fan-out: one child per item. A list, or a template whose non-empty lines are the items. */
  forEach?: string[] | string
  /** Children of this fan-out running at once (default: the plan's `concurrency`, else 4). */
  concurrency?: number
  /** Subagent provider (`spawn` by default; `fork`, or any registered one). */
  provider?: string
  /** Model of the child (`model` or `provider:model`). */
  model?: string
  /** The child's agent preset (e.g. `plan`, `ask`); default the parent's. It narrows, never widens. */
  preset?: string
  /** Only these tools. */
  tools?: string[]
  description?: string
  /** `worktree`: each child of the step works in its own git worktree and branch (see `ctx.subagents`). */
  isolation?: 'none' | 'worktree'
}

export interface WorkflowPlan {
  name?: string
  /** Default fan-out concurrency. */
  concurrency?: number
  steps: WorkflowStep[]
}

const STEP_ID = /^[a-z][a-z0-9_-]{0,39}$/
const REFERENCE = /\{\{\s*steps\.([a-z][a-z0-9_-]*)\s*\}\}/g
const ITEM = /\{\{\s*item\s*\}\}/g
export const MAX_FAN_OUT = 64
const MAX_CONCURRENCY = 16

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function checkConcurrency(value: unknown, where: string, problems: string[]): void {
  if (value === undefined) return
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_CONCURRENCY) {
    problems.push(`${where}.concurrency must be an integer from 1 to ${MAX_CONCURRENCY}`)
  }
}

function checkStep(raw: unknown, index: number, seen: Set<string>, problems: string[]): void {
  const where = `steps[${index}]`
  if (!isRecord(raw)) {
    problems.push(`${where} must be an object with at least "id" and "prompt"`)
    return
  }
  const known = [
    'id',
    'prompt',
    'forEach',
    'concurrency',
    'provider',
    'model',
    'preset',
    'tools',
    'description',
    'isolation',
  ]
  for (const key of Object.keys(raw)) if (!known.includes(key)) problems.push(`${where}: unknown field "${key}"`)
  if (typeof raw.id !== 'string' || !STEP_ID.test(raw.id)) {
    problems.push(`${where}.id must match ${STEP_ID} (e.g. "review")`)
  } else if (seen.has(raw.id)) {
    problems.push(`${where}.id "${raw.id}" is used twice`)
  }
  if (typeof raw.prompt !== 'string' || raw.prompt.trim() === '')
    problems.push(`${where}.prompt must be a non-empty string`)
  else {
    for (const match of raw.prompt.matchAll(REFERENCE)) {
      if (!seen.has(match[1] as string))
        problems.push(`${where}.prompt refers to {{steps.${match[1]}}}, which is not an earlier step`)
    }
    if (raw.forEach === undefined && ITEM.test(raw.prompt))
      problems.push(`${where}.prompt uses {{item}} but the step has no forEach`)
    ITEM.lastIndex = 0
  }
  if (raw.forEach !== undefined) {
    const list = raw.forEach
    if (Array.isArray(list)) {
      if (list.length === 0 || list.length > MAX_FAN_OUT || !list.every((item) => typeof item === 'string')) {
        problems.push(`${where}.forEach must be 1 to ${MAX_FAN_OUT} strings (or a "{{steps.<id>}}" template)`)
      }
    } else if (typeof list !== 'string' || !REFERENCE.test(list)) {
      problems.push(
        `${where}.forEach must be a list of strings or a template naming an earlier step, e.g. "{{steps.list}}"`,
      )
    }
    REFERENCE.lastIndex = 0
  }
  checkConcurrency(raw.concurrency, where, problems)
  for (const key of ['provider', 'model', 'preset', 'description'] as const) {
    if (raw[key] !== undefined && typeof raw[key] !== 'string') problems.push(`${where}.${key} must be a string`)
  }
  if (raw.isolation !== undefined && raw.isolation !== 'none' && raw.isolation !== 'worktree')
    problems.push(`${where}.isolation must be "worktree" or "none"`)
  if (raw.tools !== undefined && (!Array.isArray(raw.tools) || !raw.tools.every((tool) => typeof tool === 'string'))) {
    problems.push(`${where}.tools must be a list of tool names`)
  }
  if (typeof raw.id === 'string') seen.add(raw.id)
}

/** Validates a plan (an object, or its JSON text). Throws `WORKFLOW_PLAN_INVALID` naming every problem. */
export function parsePlan(input: unknown): WorkflowPlan {
  let raw = input
  if (typeof input === 'string') {
    try {
      raw = JSON.parse(input)
    } catch (error) {
      throw new HarnessError('WORKFLOW_PLAN_INVALID', `the workflow plan is not JSON: ${(error as Error).message}`, {})
    }
  }
  const problems: string[] = []
  if (!isRecord(raw) || !Array.isArray(raw.steps) || raw.steps.length === 0) {
    problems.push('a plan is an object with a non-empty "steps" list, e.g. {"steps":[{"id":"a","prompt":"..."}]}')
  } else {
    for (const key of Object.keys(raw)) {
      if (!['name', 'concurrency', 'steps'].includes(key)) problems.push(`unknown plan field "${key}"`)
    }
    if (raw.name !== undefined && typeof raw.name !== 'string') problems.push('name must be a string')
    checkConcurrency(raw.concurrency, 'plan', problems)
    const seen = new Set<string>()
    for (const [index, step] of raw.steps.entries()) checkStep(step, index, seen, problems)
  }
  if (problems.length > 0) {
    throw new HarnessError('WORKFLOW_PLAN_INVALID', `the workflow plan is invalid: ${problems.join('; ')}`, {
      problems,
    })
  }
  return JSON.parse(JSON.stringify(raw)) as WorkflowPlan
}

/** The plan as a JSON value (what `workflow/started` records). */
export function planJson(plan: WorkflowPlan): { [key: string]: JsonValue } {
  return JSON.parse(JSON.stringify(plan))
}

/** Fills `{{steps.<id>}}` and `{{item}}`. */
export function render(template: string, results: ReadonlyMap<string, string>, item?: string): string {
  const filled = template.replace(REFERENCE, (_all, id: string) => results.get(id) ?? '')
  return item === undefined ? filled : filled.replace(ITEM, item)
}

/** The items of a fan-out step, given the results of the steps before it. */
export function itemsOf(step: WorkflowStep, results: ReadonlyMap<string, string>): string[] | undefined {
  if (step.forEach === undefined) return undefined
  if (Array.isArray(step.forEach)) return step.forEach
  const lines = render(step.forEach, results)
    .split('\n')
    .map((line) => line.replace(/^\s*(?:[-*]|\d+[.)])\s+/, '').trim())
    .filter((line) => line !== '')
  return lines.slice(0, MAX_FAN_OUT)
}

/** The key of one task: the step id, or `id[index]` for an item of a fan-out. */
export function taskKey(step: string, index?: number): string {
  return index === undefined ? step : `${step}[${index}]`
}

/** A fan-out's result as later prompts see it: each item's report under its item. */
export function gather(items: readonly string[], texts: readonly string[]): string {
  return items.map((item, index) => `## ${item}\n${texts[index] ?? ''}`.trim()).join('\n\n')
}
