// A session's workflows as its log tells them: the plan, each task's child and outcome, and whether
// the workflow ended. Resume reads the completed tasks from here and runs only the rest.
import type { AnySessionEvent } from '@dsh/session'
import type { WorkflowPlan } from './plan.js'
import { taskKey } from './plan.js'

export type WorkflowOutcome = 'completed' | 'failed' | 'cancelled' | 'interrupted'
export type TaskOutcome = 'completed' | 'failed' | 'cancelled' | 'interrupted'

export interface WorkflowTaskRecord {
  key: string
  step: string
  index?: number
  item?: string
  subagentId: string
  childSession: string
  status: 'running' | TaskOutcome
  text?: string
}

export interface WorkflowRecord {
  workflowId: string
  name?: string
  plan: WorkflowPlan
  /** `running` while the log has no end for it (after a crash that is `interrupted` once resumed). */
  status: 'running' | WorkflowOutcome
  /** Latest attempt of each task, in the order they started. */
  tasks: WorkflowTaskRecord[]
  /** Reports of the tasks that completed (what a resume reuses). */
  completed: Map<string, string>
  resumes: number
  text?: string
  message?: string
}

export const WORKFLOW_EVENT_TYPES = [
  'workflow/started',
  'workflow/task-started',
  'workflow/task-finished',
  'workflow/resumed',
  'workflow/finished',
] as const

/** Folds every workflow of a log (the events after the session's seed). */
export function foldWorkflows(events: readonly AnySessionEvent[]): WorkflowRecord[] {
  const records = new Map<string, WorkflowRecord>()
  for (const event of events) {
    if (!event.type.startsWith('workflow/')) continue
    const data = event.data as { workflowId: string } & Record<string, unknown>
    if (event.type === 'workflow/started') {
      const plan = data.plan as unknown as WorkflowPlan
      records.set(data.workflowId, {
        workflowId: data.workflowId,
        ...(plan.name !== undefined ? { name: plan.name } : {}),
        plan,
        status: 'running',
        tasks: [],
        completed: new Map(),
        resumes: 0,
      })
      continue
    }
    const record = records.get(data.workflowId)
    if (!record) continue
    if (event.type === 'workflow/task-started') {
      const key = taskKey(data.step as string, data.index as number | undefined)
      record.tasks = record.tasks.filter((task) => task.key !== key)
      record.tasks.push({
        key,
        step: data.step as string,
        ...(data.index !== undefined ? { index: data.index as number } : {}),
        ...(data.item !== undefined ? { item: data.item as string } : {}),
        subagentId: data.subagentId as string,
        childSession: data.childSession as string,
        status: 'running',
      })
    } else if (event.type === 'workflow/task-finished') {
      const key = taskKey(data.step as string, data.index as number | undefined)
      const task = record.tasks.find((item) => item.key === key)
      if (task) {
        task.status = data.outcome as TaskOutcome
        task.text = data.text as string
      }
      if (data.outcome === 'completed') record.completed.set(key, data.text as string)
    } else if (event.type === 'workflow/resumed') {
      record.status = 'running'
      record.resumes += 1
      delete record.text
      delete record.message
    } else if (event.type === 'workflow/finished') {
      record.status = data.outcome as WorkflowOutcome
      record.text = data.text as string
      if (typeof data.message === 'string') record.message = data.message
      // Tasks the log never saw end went down with their workflow.
      for (const task of record.tasks) if (task.status === 'running') task.status = 'interrupted'
    }
  }
  return [...records.values()]
}
