// @dsh/orchestration/workflow: `ctx.workflows`. A workflow is a small declarative plan of subagent steps (fan-out
// over a list with a concurrency limit, fan-in through `{{steps.<id>}}`, a final step) whose every
// task is a child session linked to the parent in its log. The workflow's state is folded from that
// log, so after a crash `resume` runs only the tasks that never completed. A loop repeats a task in
// a fresh child until a check command passes (or an iteration cap or token budget stops it).
import { randomUUID } from 'node:crypto'
import type { Agent } from '@dsh/agent'
import { type Context, HarnessError, type JsonValue, Service } from '@dsh/kernel'
import type { AnySessionEvent, Session, SessionEventMap } from '@dsh/session'
import type {} from '../subagents/index.js'
import { runPlan, type WorkflowResult } from './engine.js'
import {
  foldWorkflows,
  type TaskOutcome,
  WORKFLOW_EVENT_TYPES,
  type WorkflowOutcome,
  type WorkflowRecord,
} from './fold.js'
import { checkLoop, LOOP_EVENT_TYPES, type LoopRequest, type LoopResult, runLoop } from './loop.js'
import { foldLoops, type LoopRecord } from './loop-fold.js'
import { parsePlan, planJson, type WorkflowPlan } from './plan.js'

export type { WorkflowResult } from './engine.js'
export { foldWorkflows, type WorkflowRecord, type WorkflowTaskRecord } from './fold.js'
export type { LoopOutcome, LoopRequest, LoopResult } from './loop.js'
export { foldLoops, type LoopRecord } from './loop-fold.js'
export { parsePlan, type WorkflowPlan, type WorkflowStep } from './plan.js'

/** Who started a workflow: the model's tool call, a person's /command, or a client call. */
export type WorkflowOrigin = 'tool' | 'command' | 'rpc'

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A workflow began: its id and the whole plan (what a resume runs again). */
    'workflow/started': {
      workflowId: string
      plan: { [key: string]: JsonValue }
      origin: WorkflowOrigin
      callId?: string
    }
    /** A task's child started: the step (and item of a fan-out) linked to the child session. */
    'workflow/task-started': {
      workflowId: string
      step: string
      index?: number
      item?: string
      subagentId: string
      childSession: string
    }
    /** A task's child reported. */
    'workflow/task-finished': {
      workflowId: string
      step: string
      index?: number
      subagentId: string
      outcome: TaskOutcome
      text: string
      message?: string
    }
    /** A stopped workflow runs again; tasks that completed before are reused. */
    'workflow/resumed': { workflowId: string; origin: WorkflowOrigin }
    /** The workflow ended. `interrupted` (synthetic): the process ended while it ran; resume it. */
    'workflow/finished': {
      workflowId: string
      outcome: WorkflowOutcome
      text: string
      message?: string
      synthetic?: true
    }
  }
}

declare module 'cordis' {
  interface Context {
    workflows: WorkflowsService
  }
  interface Events {
    /** A workflow of this process ended (surfaces show it; the durable fact is `workflow/finished`). */
    'workflow/finished'(result: WorkflowResult, session: Session): void
  }
}

export interface WorkflowsConfig {
  /** Fan-out children at once when a plan says nothing. Default 4. */
  concurrency?: number
  /** Loop iterations when a request says nothing. Default 5. */
  maxIterations?: number
}

/** A workflow this process runs. `done` never rejects. */
export interface RunningWorkflow {
  workflowId: string
  done: Promise<WorkflowResult>
}

export interface StartOptions {
  origin?: WorkflowOrigin
  callId?: string
  /** The caller's cancellation (a tool call's signal). */
  signal?: AbortSignal
}

/** A loop this process runs. `done` never rejects. */
export interface RunningLoop {
  loopId: string
  done: Promise<LoopResult>
}

interface Live {
  controller: AbortController
  done: Promise<unknown>
  session: string
}

export class WorkflowsService extends Service {
  static readonly provide = 'workflows'
  static readonly inject = ['sessions', 'subagents']
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly live = new Map<string, Live>()
  readonly settings: Required<WorkflowsConfig>
  readonly home: Context

  constructor(ctx: Context, config: WorkflowsConfig = {}) {
    const concurrency = config?.concurrency ?? 4
    const maxIterations = config?.maxIterations ?? 5
    if (!Number.isInteger(concurrency) || concurrency < 1 || !Number.isInteger(maxIterations) || maxIterations < 1) {
      throw new HarnessError(
        'CONFIG_INVALID',
        'workflows config: concurrency and maxIterations must be integers >= 1',
        {
          concurrency,
          maxIterations,
        },
      )
    }
    super(ctx, 'workflows')
    this.settings = { concurrency, maxIterations }
    this.home = ctx
    ctx.sessions.defineEvent(...WORKFLOW_EVENT_TYPES, ...LOOP_EVENT_TYPES)
    // A resumed session whose workflow was running when the process ended: say so, durably; a resume runs the rest.
    ctx.on('session/restored', (session) => this.closeDangling(session))
    ctx.effect(
      () => () =>
        Promise.all(
          [...this.live.values()].map((live) => {
            live.controller.abort()
            return live.done
          }),
        ).then(() => undefined),
      'workflows.live',
    )
  }

  /** The workflows a session's log records (events a fork copied from its parent are left out). */
  records(session: Session): WorkflowRecord[] {
    return foldWorkflows(session.events.slice(session.header.seedLength ?? 0) as readonly AnySessionEvent[])
  }

  /** The loops a session's log records (events a fork copied from its parent are left out). */
  loops(session: Session): LoopRecord[] {
    return foldLoops(session.events.slice(session.header.seedLength ?? 0) as readonly AnySessionEvent[])
  }

  /** Whether this process is running the workflow. */
  isRunning(workflowId: string): boolean {
    return this.live.has(workflowId)
  }

  /** Starts a plan (validated first: `WORKFLOW_PLAN_INVALID`) as children of `parent`. */
  start(parent: Agent, input: unknown, options: StartOptions = {}): RunningWorkflow {
    const plan = parsePlan(input)
    const workflowId = `wf-${randomUUID().slice(0, 8)}`
    this.append(parent.session, 'workflow/started', {
      workflowId,
      plan: planJson(plan),
      origin: options.origin ?? 'rpc',
      ...(options.callId !== undefined ? { callId: options.callId } : {}),
    })
    return this.launch(parent, workflowId, plan, new Map(), options)
  }

  /**
   * Runs a stopped workflow of `parent`'s session again: the tasks its log shows completed are reused,
   * the others run. Throws `WORKFLOW_UNKNOWN`, `WORKFLOW_RUNNING` or `WORKFLOW_COMPLETED`.
   */
  resume(parent: Agent, workflowId: string, options: StartOptions = {}): RunningWorkflow {
    const record = this.records(parent.session).find((item) => item.workflowId === workflowId)
    if (!record) {
      const known = this.records(parent.session).map((item) => item.workflowId)
      throw new HarnessError(
        'WORKFLOW_UNKNOWN',
        `this session has no workflow ${workflowId}; its workflows: ${known.join(', ') || 'none'}`,
        { workflowId },
      )
    }
    if (this.live.has(workflowId) || record.status === 'running') {
      throw new HarnessError('WORKFLOW_RUNNING', `workflow ${workflowId} is running; cancel it first or wait`, {
        workflowId,
      })
    }
    if (record.status === 'completed') {
      throw new HarnessError('WORKFLOW_COMPLETED', `workflow ${workflowId} already completed; nothing to resume`, {
        workflowId,
      })
    }
    this.append(parent.session, 'workflow/resumed', { workflowId, origin: options.origin ?? 'rpc' })
    return this.launch(parent, workflowId, record.plan, record.completed, options)
  }

  /**
   * Cancels a running workflow or loop and every child it runs; resolves once they all stopped (false:
   * nothing of that id runs in this process).
   */
  async cancel(id: string): Promise<boolean> {
    const live = this.live.get(id)
    if (!live) return false
    live.controller.abort()
    await live.done
    return true
  }

  /** The ids of the workflows and loops this process runs for a session. */
  running(sessionId: string): string[] {
    return [...this.live].filter(([, live]) => live.session === sessionId).map(([id]) => id)
  }

  /**
   * Repeats a task in fresh children until the check command passes (see `LoopRequest`). Throws
   * `LOOP_INVALID` for a bad request; the rest are outcomes of `done`.
   */
  startLoop(parent: Agent, request: LoopRequest): RunningLoop {
    const maxIterations = request.maxIterations ?? this.settings.maxIterations
    checkLoop(request, maxIterations)
    const loopId = `loop-${randomUUID().slice(0, 8)}`
    const done = this.track(loopId, parent.session.id, request.signal, (signal) =>
      runLoop(this.home, parent, loopId, { ...request, signal }, maxIterations),
    )
    return { loopId, done }
  }

  /**
   * Continues a stopped loop of `parent`'s session after its last logged iteration: the iterations the
   * log holds are not run again, the next one is told the last check's output, and the tokens so far
   * count against the budget. Throws `LOOP_UNKNOWN`, `LOOP_RUNNING` or `LOOP_FINISHED` (it passed or hit
   * its cap or budget: start a new loop).
   */
  resumeLoop(parent: Agent, loopId: string, options: StartOptions = {}): RunningLoop {
    const records = this.loops(parent.session)
    const record = records.find((item) => item.loopId === loopId)
    if (!record) {
      throw new HarnessError(
        'LOOP_UNKNOWN',
        `this session has no loop ${loopId}; its loops: ${records.map((item) => item.loopId).join(', ') || 'none'}`,
        { loopId },
      )
    }
    if (this.live.has(loopId) || record.status === 'running') {
      throw new HarnessError('LOOP_RUNNING', `loop ${loopId} is running; cancel it first or wait`, { loopId })
    }
    if (record.status === 'passed' || record.status === 'max-iterations' || record.status === 'budget') {
      throw new HarnessError('LOOP_FINISHED', `loop ${loopId} ended ${record.status}; start a new loop instead`, {
        loopId,
        outcome: record.status,
      })
    }
    const request: LoopRequest = {
      task: record.task,
      until: record.until,
      maxIterations: record.maxIterations,
      origin: options.origin ?? 'rpc',
      ...(record.tokenBudget !== undefined ? { tokenBudget: record.tokenBudget } : {}),
      ...(record.provider !== undefined ? { provider: record.provider } : {}),
      ...(record.model !== undefined ? { model: record.model } : {}),
      ...(record.checkTimeoutMs !== undefined ? { checkTimeoutMs: record.checkTimeoutMs } : {}),
      ...(options.callId !== undefined ? { callId: options.callId } : {}),
    }
    const state = {
      iteration: record.iterations,
      tokens: record.tokens,
      ...(record.last !== undefined ? { last: record.last } : {}),
    }
    const done = this.track(loopId, parent.session.id, options.signal, (signal) =>
      runLoop(this.home, parent, loopId, { ...request, signal }, record.maxIterations, state),
    )
    return { loopId, done }
  }

  /** Runs `work` under its own controller (linked to the caller's signal), cancellable by id. */
  private track<T>(
    id: string,
    session: string,
    signal: AbortSignal | undefined,
    work: (signal: AbortSignal) => Promise<T>,
  ) {
    const controller = new AbortController()
    const relay = () => controller.abort()
    signal?.addEventListener('abort', relay, { once: true })
    if (signal?.aborted) controller.abort()
    const done = work(controller.signal).finally(() => {
      signal?.removeEventListener('abort', relay)
      this.live.delete(id)
    })
    this.live.set(id, { controller, done, session })
    return done
  }

  private launch(
    parent: Agent,
    workflowId: string,
    plan: WorkflowPlan,
    completed: ReadonlyMap<string, string>,
    options: StartOptions,
  ): RunningWorkflow {
    const session = parent.session
    const deps = {
      subagents: this.home.subagents,
      defaultConcurrency: this.settings.concurrency,
      log: <T extends keyof SessionEventMap>(type: T, data: SessionEventMap[T]) => this.append(session, type, data),
    }
    const done = this.track(workflowId, session.id, options.signal, async (signal) => {
      const result = await runPlan(deps, parent, workflowId, plan, completed, signal)
      this.append(session, 'workflow/finished', {
        workflowId,
        outcome: result.outcome,
        text: result.text,
        ...(result.message !== undefined ? { message: result.message } : {}),
      })
      this.home.emit('workflow/finished', result, session)
      return result
    })
    return { workflowId, done }
  }

  /** Appends while the session is live in this process (a released session keeps what it had). */
  private append<T extends keyof SessionEventMap>(session: Session, type: T, data: SessionEventMap[T]): void {
    if (this.home.sessions.get(session.id) !== session) return
    session.append(type, data)
  }

  private closeDangling(session: Session): void {
    for (const record of this.loops(session)) {
      if (record.status !== 'running' || this.live.has(record.loopId)) continue
      session.append('loop/finished', {
        loopId: record.loopId,
        outcome: 'interrupted',
        iterations: record.iterations,
        tokens: record.tokens,
        message: `the process ended while the loop ran; ${record.iterations} iteration(s) had finished. Continue it with /loop resume ${record.loopId} (or the loop tool's resume).`,
        synthetic: true,
      })
    }
    for (const record of this.records(session)) {
      if (record.status !== 'running' || this.live.has(record.workflowId)) continue
      session.append('workflow/finished', {
        workflowId: record.workflowId,
        outcome: 'interrupted',
        text: '',
        message: `the process ended while the workflow ran; ${record.completed.size} task(s) had completed. Resume it to run the rest.`,
        synthetic: true,
      })
    }
  }
}

export default WorkflowsService
