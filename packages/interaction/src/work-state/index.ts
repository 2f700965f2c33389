// @dsh/interaction/work-state: `ctx.workState`, the session's working state (todo list, plan mode, goal) kept as
// durable session events and folded from the log, so it survives resume and no loop holds a second
// copy. The same plugin adds what the state means to a turn: the dynamic context section the model
// reads, the plan-mode policy on `tools/pre-execute`, the goal driver on `agent/turn-stopping`, and
// the /plan and /goal commands when `ctx.commands` is present.
import type { TurnContinuation, TurnStopping } from '@dsh/agent'
import type { PromptScope } from '@dsh/agent/system-prompt'
import type { ToolCallInput, ToolPreExecuteDecision } from '@dsh/agent/tools'
import { type Context, directService, HarnessError, Service } from '@dsh/kernel'
import type { AnySessionEvent, Session, SessionEventMap } from '@dsh/session'
import type {} from '../index.js'
import { registerCommands } from './commands.js'

export type TodoStatus = 'pending' | 'in_progress' | 'completed'
export type TodoPriority = 'high' | 'medium' | 'low'

export interface TodoItem {
  content: string
  status: TodoStatus
  priority?: TodoPriority
}

export interface PlanState {
  on: boolean
  /** The last plan the model proposed while plan mode was on. */
  proposed?: string
}

export type GoalStatus = 'active' | 'met' | 'abandoned' | 'exhausted'

export interface GoalState {
  text: string
  status: GoalStatus
  /** Turn continuations the goal driver has used. */
  continuations: number
  maxContinuations: number
  summary?: string
  /** Seq of the `goal/set` event. */
  setAt: number
  /**
   * Set when the goal came with a fork's seed (set before `header.seedLength`): it is the parent's
   * objective, shown as context, never driven in this session.
   */
  inherited?: true
}

/** The folded state of one session. `touched`: the log has at least one work-state event. */
export interface WorkState {
  todos: TodoItem[]
  plan: PlanState
  goal?: GoalState
  touched: boolean
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The whole todo list after a `todo_write` (replaces the previous one). */
    'todo/write': { todos: TodoItem[] }
    /** Plan mode switched; `by` says who (the user through a command or surface, or the model). */
    'plan/mode': { on: boolean; by: 'user' | 'model'; reason?: string }
    /** The model proposed a plan (exit_plan_mode). */
    'plan/proposed': { plan: string }
    'goal/set': { text: string; maxContinuations: number }
    /** The goal driver kept a finished turn going (count from 1). */
    'goal/continued': { count: number }
    'goal/end': { status: Exclude<GoalStatus, 'active'>; by: 'model' | 'user' | 'bound'; summary?: string }
  }
}

declare module 'cordis' {
  interface Context {
    workState: WorkStateService
  }
  interface Events {
    /** After any work-state event was appended to a live session. */
    'work-state/changed'(session: Session, state: Readonly<WorkState>): void
  }
}

export const WORK_STATE_EVENT_TYPES = [
  'todo/write',
  'plan/mode',
  'plan/proposed',
  'goal/set',
  'goal/continued',
  'goal/end',
] as const

export interface WorkStateConfig {
  /** Tools refused in plan mode besides those presented as `diff` or `terminal`. */
  mutating?: string[]
  /** Tools never refused in plan mode, whatever their presentation. */
  readOnly?: string[]
  /** Default bound of goal continuations. Default 10. */
  maxContinuations?: number
}

export const DEFAULT_MUTATING = ['write', 'edit', 'bash', 'job_kill', 'apply_patch', 'notebook_edit']

export function emptyState(): WorkState {
  return { todos: [], plan: { on: false }, touched: false }
}

/** Applies work-state events to `state` (mutated and returned); other events are ignored. */
export function foldWorkState(events: readonly AnySessionEvent[], state: WorkState = emptyState()): WorkState {
  for (const event of events) {
    switch (event.type) {
      case 'todo/write':
        state.todos = event.data.todos.map((item) => ({ ...item }))
        break
      case 'plan/mode':
        state.plan = event.data.on ? { on: true } : { on: false }
        break
      case 'plan/proposed':
        state.plan = { ...state.plan, proposed: event.data.plan }
        break
      case 'goal/set':
        state.goal = {
          text: event.data.text,
          status: 'active',
          continuations: 0,
          maxContinuations: event.data.maxContinuations,
          setAt: event.seq,
        }
        break
      case 'goal/continued':
        if (state.goal) state.goal.continuations = event.data.count
        break
      case 'goal/end':
        if (state.goal) {
          state.goal.status = event.data.status
          if (typeof event.data.summary === 'string') state.goal.summary = event.data.summary
        }
        break
      default:
        continue
    }
    state.touched = true
  }
  return state
}

function cloneState(state: WorkState): WorkState {
  return structuredClone(state)
}

const STATUS_MARK: Record<TodoStatus, string> = { pending: '[ ]', in_progress: '[>]', completed: '[x]' }

/** The text of the dynamic context section: what the model is told about the working state. */
export function renderWorkState(state: WorkState): string | undefined {
  if (!state.touched) return undefined
  const lines = ['# Working state']
  if (state.plan.on) {
    lines.push(
      'Plan mode is ON: do not change files or run commands that change anything (such tools are refused).',
      'Investigate with read-only tools, then propose your plan with exit_plan_mode and wait for the user.',
    )
  } else lines.push('Plan mode is off.')
  const goal = state.goal
  if (goal?.inherited) lines.push(`Goal of the parent session (context only, not yours to mark): ${goal.text}`)
  else if (goal?.status === 'active') {
    lines.push(`Goal (active): ${goal.text}`, 'Keep working until it is met, then call goal_done with a short summary.')
  } else if (goal) lines.push(`Goal (${goal.status}): ${goal.text}`)
  if (state.todos.length === 0) lines.push('Todo list: empty.')
  else {
    lines.push('Todo list:')
    for (const item of state.todos) {
      lines.push(`${STATUS_MARK[item.status]} ${item.content}${item.priority ? ` (${item.priority})` : ''}`)
    }
  }
  return lines.join('\n')
}

const TODO_STATUSES: readonly string[] = ['pending', 'in_progress', 'completed']
const PRIORITIES: readonly string[] = ['high', 'medium', 'low']

/** Checks a todo list from outside the process (tool args are schema-checked already). Throws `TODO_INVALID`. */
export function checkTodos(todos: unknown): TodoItem[] {
  if (!Array.isArray(todos)) throw new HarnessError('TODO_INVALID', 'todos must be a list', {})
  return todos.map((raw, index) => {
    const item = raw as Partial<TodoItem>
    if (typeof item?.content !== 'string' || !item.content.trim()) {
      throw new HarnessError('TODO_INVALID', `todo ${index} has no content`, { index })
    }
    if (!TODO_STATUSES.includes(item.status as string)) {
      throw new HarnessError('TODO_INVALID', `todo ${index} has status "${String(item.status)}"`, { index })
    }
    if (item.priority !== undefined && !PRIORITIES.includes(item.priority)) {
      throw new HarnessError('TODO_INVALID', `todo ${index} has priority "${String(item.priority)}"`, { index })
    }
    return {
      content: item.content,
      status: item.status as TodoStatus,
      ...(item.priority ? { priority: item.priority } : {}),
    }
  })
}

function checkConfig(config: WorkStateConfig): Required<WorkStateConfig> {
  const maxContinuations = config.maxContinuations ?? 10
  if (!Number.isInteger(maxContinuations) || maxContinuations < 0) {
    throw new HarnessError('CONFIG_INVALID', 'work-state config: maxContinuations must be an integer >= 0', {
      maxContinuations: String(maxContinuations),
    })
  }
  for (const key of ['mutating', 'readOnly'] as const) {
    const value = config[key]
    if (value !== undefined && (!Array.isArray(value) || value.some((name) => typeof name !== 'string'))) {
      throw new HarnessError('CONFIG_INVALID', `work-state config: ${key} must be a list of tool names`, { key })
    }
  }
  return { mutating: config.mutating ?? DEFAULT_MUTATING, readOnly: config.readOnly ?? [], maxContinuations }
}

interface Cached {
  length: number
  state: WorkState
}

/**
 * `ctx.workState`. Reads fold the session's log (incrementally: logs are append-only); writes append
 * one durable event to a live session and emit `work-state/changed`.
 */
export class WorkStateService extends Service {
  static readonly provide = 'workState'
  static readonly inject = ['sessions', 'systemPrompt']
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly settings: Required<WorkStateConfig>
  readonly cache = new WeakMap<Session, Cached>()
  readonly home: Context
  /** `ctx.sessions` without Cordis's per-call proxies: asked on every tool call (decision 351). */
  readonly sessions: () => Context['sessions']

  constructor(ctx: Context, config: WorkStateConfig = {}) {
    const settings = checkConfig(config ?? {})
    super(ctx, 'workState')
    this.settings = settings
    this.home = ctx
    const sessions = directService(ctx, 'sessions')
    this.sessions = () => sessions() ?? ctx.sessions
    ctx.sessions.defineEvent(...WORK_STATE_EVENT_TYPES)
    ctx.systemPrompt.register({
      name: 'work-state',
      kind: 'dynamic',
      order: 50,
      render: (scope: PromptScope) => {
        const session = scope.sessionId === undefined ? undefined : this.sessions().get(scope.sessionId)
        return session ? renderWorkState(this.state(session)) : undefined
      },
    })
    ctx.on('tools/pre-execute', (call, next) => this.planPolicy(call, next))
    ctx.on('agent/turn-stopping', (stopping) => this.driveGoal(stopping))
    ctx.inject(['commands'], (inner) => registerCommands(inner, this))
  }

  /** The folded state of a session (a copy). An unknown session id gives the empty state. */
  state(session: Session | string): WorkState {
    const live = typeof session === 'string' ? this.sessions().get(session) : session
    if (!live) return emptyState()
    let cached = this.cache.get(live)
    if (!cached || cached.length !== live.length) {
      const from = cached && cached.length < live.length ? cached.length : 0
      const base = from > 0 && cached ? cached.state : emptyState()
      cached = { length: live.length, state: foldWorkState(live.events.slice(from) as AnySessionEvent[], base) }
      this.cache.set(live, cached)
    }
    const copy = cloneState(cached.state)
    if (copy.goal && copy.goal.setAt < (live.header.seedLength ?? 0)) copy.goal.inherited = true
    return copy
  }

  todos(session: Session | string): TodoItem[] {
    return this.state(session).todos
  }

  /**
   * Whether plan mode is on for a session: its own log, else (for a spawned child) its live parent's.
   * A forked child carries the parent's `plan/mode` events in its seed.
   */
  inPlanMode(sessionId: string): boolean {
    let session = this.sessions().get(sessionId)
    for (let hops = 0; session && hops < 8; hops++) {
      if (this.state(session).plan.on) return true
      const parent = session.header.parentSession
      session = parent === undefined ? undefined : this.sessions().get(parent)
    }
    return false
  }

  /** Whether plan mode refuses a call: listed mutating, or presented as a diff or a terminal command. */
  isMutating(call: Pick<ToolCallInput, 'toolName' | 'presentation'>): boolean {
    if (this.settings.readOnly.includes(call.toolName)) return false
    if (this.settings.mutating.includes(call.toolName)) return true
    return call.presentation.kind === 'diff' || call.presentation.kind === 'terminal'
  }

  /** Replaces the todo list. Throws `TODO_INVALID`, `SESSION_NOT_FOUND`. */
  writeTodos(session: Session | string, todos: TodoItem[]): TodoItem[] {
    const checked = checkTodos(todos)
    this.append(session, 'todo/write', { todos: checked })
    return checked
  }

  /** Switches plan mode; a no-op (nothing logged) when it already is in that state. */
  setPlanMode(session: Session | string, on: boolean, by: 'user' | 'model', reason?: string): boolean {
    if (this.state(session).plan.on === on) return false
    this.append(session, 'plan/mode', reason === undefined ? { on, by } : { on, by, reason })
    return true
  }

  /** Records the model's proposed plan. Throws `PLAN_MODE_OFF` when plan mode is off. */
  proposePlan(session: Session | string, plan: string): void {
    if (!this.state(session).plan.on) {
      throw new HarnessError('PLAN_MODE_OFF', 'plan mode is off: there is nothing to propose a plan for', {})
    }
    this.append(session, 'plan/proposed', { plan })
  }

  /** The user accepts the proposed plan: plan mode switches off. Throws `PLAN_MODE_OFF`. */
  acceptPlan(session: Session | string): string | undefined {
    const plan = this.state(session).plan
    if (!plan.on) throw new HarnessError('PLAN_MODE_OFF', 'plan mode is off', {})
    this.append(session, 'plan/mode', { on: false, by: 'user', reason: 'plan accepted' })
    return plan.proposed
  }

  /** Sets the session's goal (replacing an active one). Throws `GOAL_INVALID` for empty text. */
  setGoal(session: Session | string, text: string, maxContinuations = this.settings.maxContinuations): GoalState {
    if (!text.trim()) throw new HarnessError('GOAL_INVALID', 'a goal needs text', {})
    this.append(session, 'goal/set', { text: text.trim(), maxContinuations })
    return this.state(session).goal as GoalState
  }

  /** Ends the active goal. Throws `GOAL_NONE` when there is no active goal. */
  endGoal(
    session: Session | string,
    status: Exclude<GoalStatus, 'active'>,
    by: 'model' | 'user' | 'bound',
    summary?: string,
  ): GoalState {
    const goal = this.state(session).goal
    if (goal?.status !== 'active' || goal.inherited) {
      throw new HarnessError('GOAL_NONE', 'there is no active goal in this session', {})
    }
    this.append(session, 'goal/end', summary === undefined ? { status, by } : { status, by, summary })
    return this.state(session).goal as GoalState
  }

  private append<T extends (typeof WORK_STATE_EVENT_TYPES)[number]>(
    session: Session | string,
    type: T,
    data: SessionEventMap[T],
  ): void {
    const live = typeof session === 'string' ? this.sessions().get(session) : session
    if (!live || this.sessions().get(live.id) !== live) {
      throw new HarnessError(
        'SESSION_NOT_FOUND',
        `session ${String(typeof session === 'string' ? session : session.id)} is not live`,
        {},
      )
    }
    live.append(type, data)
    this.home.emit('work-state/changed', live, this.state(live))
  }

  private async planPolicy(call: ToolCallInput, next: () => Promise<ToolPreExecuteDecision>) {
    if (call.sessionId === undefined || !this.inPlanMode(call.sessionId) || !this.isMutating(call)) return next()
    const own = this.state(call.sessionId).plan.on
    return {
      action: 'deny',
      reason: own
        ? `PLAN_MODE: ${call.toolName} changes things and plan mode is on. Investigate with read-only tools, then propose a plan with exit_plan_mode; the user switches plan mode off by accepting it.`
        : `PLAN_MODE: ${call.toolName} changes things and the session that delegated to you is in plan mode. Do not change anything: investigate with read-only tools and report what you found and what you would change.`,
    } as const
  }

  private driveGoal(stopping: TurnStopping): TurnContinuation | undefined {
    if (stopping.reason !== 'completed') return undefined
    const session = stopping.session
    const goal = this.state(session).goal
    if (goal?.status !== 'active' || goal.inherited) return undefined
    if (goal.continuations >= goal.maxContinuations) {
      this.append(session, 'goal/end', {
        status: 'exhausted',
        by: 'bound',
        summary: `stopped after ${goal.maxContinuations} continuations without goal_done`,
      })
      return undefined
    }
    this.append(session, 'goal/continued', { count: goal.continuations + 1 })
    const text = `[goal] The goal is not marked met yet: ${goal.text}\nContinue working on it. If it is met, call goal_done with a short summary; if it cannot be met, call goal_done with met: false and say why.`
    return { continue: true, message: { role: 'user', content: [{ type: 'text', text }] } }
  }
}

export default WorkStateService
