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
    switch (event.type) {
      case 'workflow/started': {
        const plan = event.data.plan as unknown as WorkflowPlan
        records.set(event.data.workflowId, {
          workflowId: event.data.workflowId,
          ...(plan.name !== undefined ? { name: plan.name } : {}),
          plan,
          status: 'running',
          tasks: [],
          completed: new Map(),
          resumes: 0,
        })
        break
      }
      case 'workflow/task-started': {
        const record = records.get(event.data.workflowId)
        if (!record) break
        const { step, index, item, subagentId, childSession } = event.data
        const key = taskKey(step, index)
        record.tasks = record.tasks.filter((task) => task.key !== key)
        record.tasks.push({
          key,
          step,
          ...(index !== undefined ? { index } : {}),
          ...(item !== undefined ? { item } : {}),
          subagentId,
          childSession,
          status: 'running',
        })
        break
      }
      case 'workflow/task-finished': {
        const record = records.get(event.data.workflowId)
        if (!record) break
        const key = taskKey(event.data.step, event.data.index)
        const task = record.tasks.find((item) => item.key === key)
        if (task) {
          task.status = event.data.outcome
          task.text = event.data.text
        }
        if (event.data.outcome === 'completed') record.completed.set(key, event.data.text)
        break
      }
      case 'workflow/resumed': {
        const record = records.get(event.data.workflowId)
        if (!record) break
        record.status = 'running'
        record.resumes += 1
        delete record.text
        delete record.message
        break
      }
      case 'workflow/finished': {
        const record = records.get(event.data.workflowId)
        if (!record) break
        record.status = event.data.outcome
        record.text = event.data.text
        if (event.data.message !== undefined) record.message = event.data.message
        // Tasks the log never saw end went down with their workflow.
        for (const task of record.tasks) if (task.status === 'running') task.status = 'interrupted'
        break
      }
    }
  }
  return [...records.values()]
}
