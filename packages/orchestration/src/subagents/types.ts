// The vocabulary of subagents: what a caller asks for, what a provider launches, the live handle a
// caller owns, the report of a run, and the data of the durable `subagent/*` events.
import type { Agent } from '@dsh/agent'
import type { ToolRestriction } from '@dsh/agent/tools'
import type { JsonValue } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import type { TurnEndReason } from '@dsh/session'

/** How a run of a child ended. `interrupted`: the process ended while it ran; its outcome is unknown. */
export type SubagentOutcome = 'completed' | 'failed' | 'cancelled' | 'interrupted'

/** `one-shot`: one task, one report. `continuable`: further messages queue FIFO as new turns. */
export type SubagentMode = 'one-shot' | 'continuable'

export interface SubagentRequest {
  /** The agent delegating; the child lives inside its scope and its session is the parent session. */
  parent: Agent
  /** The first task. */
  prompt: string
  /** Provider name (default: config `defaultProvider`, `spawn`). */
  provider?: string
  mode?: SubagentMode
  /** A short label for lists and surfaces. */
  description?: string
  /** The child's persona (a system prompt section of the child only); default: config `persona`. */
  persona?: string
  /** Narrows the parent's tool set for the child (the config `deny` list always applies too). */
  tools?: ToolRestriction
  /**
   * The child's preset (see `@dsh/presets`); default the parent's. The child's tools are still only
   * those its parent may use: a preset can narrow a child, never widen it.
   */
  preset?: string
  model?: Partial<LlmCallConfig>
  maxSteps?: number
  /** The caller's cancellation (the parent tool call's signal): aborting cancels the first run. */
  signal?: AbortSignal
  /** The parent tool call that started the child, recorded in `subagent/started`. */
  callId?: string
  /**
   * `worktree`: the child works in its own git worktree of the parent's repository, on a branch
   * `dsh/sub-...` its report names; the user merges it on request (`dsh worktrees merge`). One-shot only.
   */
  isolation?: 'worktree'
  /** The child's working folder; default the parent session's. Set by the service for `isolation`. */
  cwd?: string
}

/** Where a worktree child's work is: its branch and the files it changed (none: the worktree was removed). */
export interface SubagentWorktree {
  name: string
  branch: string
  path: string
  files: string[]
  /** True when the run changed nothing and the worktree and branch were removed. */
  removed?: boolean
}

/** What one run of a child produced. */
export interface SubagentReport {
  subagentId: string
  childSession: string
  /** 0 for the first task, then one per message sent. */
  run: number
  outcome: SubagentOutcome
  reason?: TurnEndReason
  /** The child's final text of the run (bounded by config `maxReportChars`). */
  text: string
  message?: string
  /** A child with `isolation: worktree`: where its work is. */
  worktree?: SubagentWorktree
}

/** A run's result as a provider reports it. */
export type ChildRunResult = Pick<SubagentReport, 'outcome' | 'reason' | 'text' | 'message'>

/** A live child as a provider hands it over. */
export interface SubagentChild {
  readonly childSession: string
  /** The in-process agent, when the provider runs one in this process. */
  readonly agent?: Agent
  /** Queues `text` as the child's next turn (FIFO); resolves with that turn's result. Never rejects. */
  prompt(text: string): Promise<ChildRunResult>
  /** Aborts the running turn and drops queued ones (they resolve `cancelled`). */
  cancel(reason: string): Promise<void>
  /** Cancels and releases everything the child holds. Idempotent. */
  dispose(): Promise<void>
}

/** What a provider receives: the request, the id to use, the child's depth and the effective policy. */
export interface SubagentLaunch {
  id: string
  depth: number
  request: Readonly<SubagentRequest>
  persona: string
  restriction: ToolRestriction
  /**
   * For a child whose own log is not in this process (an ACP agent): reports what it is doing, logged
   * as `subagent/progress` in the parent's log under the run in flight. In-process children do not
   * call it: their progress is their own child session.
   */
  progress(update: SubagentProgress): void
}

/** A step of a remote child's run: a finished piece of its text or thought, or a tool call's state. */
export type SubagentProgress =
  | { kind: 'message' | 'thought'; text: string }
  | {
      kind: 'tool'
      toolCallId: string
      title: string
      status: 'pending' | 'in_progress' | 'completed' | 'failed'
      /** The agent's own category of the call (ACP `kind`: read, edit, execute...). */
      toolKind?: string
    }

/**
 * A way to run children (in-process spawn or fork, a remote agent...). `start` either returns a live
 * child (ownership passes to the service) or throws after cleaning up what it created.
 */
export interface SubagentProvider {
  readonly name: string
  start(launch: SubagentLaunch): Promise<SubagentChild>
  /**
   * Optional: brings back a continuable child from its durable session (`childSession`) after its
   * live owner went away (a restart). Same ownership rule as `start`.
   */
  resume?(launch: SubagentLaunch, childSession: string): Promise<SubagentChild>
}

export type SubagentStatus = 'running' | 'idle' | 'closed'

/** A started child. The caller owns it: `dispose()` it when done (a one-shot caller after `result`). */
export interface SubagentHandle {
  readonly id: string
  readonly provider: string
  readonly mode: SubagentMode
  readonly depth: number
  readonly description: string | undefined
  readonly parentSession: string
  readonly childSession: string
  readonly agent: Agent | undefined
  readonly status: SubagentStatus
  /** The report of the first run (the `prompt` of the request). */
  readonly result: Promise<SubagentReport>
  /** Queues a follow-up as a new turn (FIFO) and resolves with its report; `signal` cancels that run. */
  send(text: string, signal?: AbortSignal): Promise<SubagentReport>
  cancel(reason?: string): Promise<void>
  /**
   * Releases the child. `final: true` (an explicit close) means it may not be reopened; otherwise a
   * continuable child whose session is durable can be brought back with `reopen`.
   */
  dispose(options?: { final?: boolean }): Promise<void>
}

/** A child as the parent's log tells it (see `foldSubagents`). */
export interface SubagentRecord {
  subagentId: string
  provider: string
  mode: SubagentMode
  childSession: string
  depth: number
  description?: string
  callId?: string
  /** From the log alone: `running` means a run was started and never reported. */
  status: SubagentStatus
  runs: number
  /** A continuable child that is closed only because its owner went away (not closed on purpose). */
  reopenable: boolean
  last?: { run: number; outcome: SubagentOutcome; reason?: TurnEndReason; text: string; synthetic?: boolean }
}

export interface SubagentStartedData {
  subagentId: string
  provider: string
  mode: SubagentMode
  childSession: string
  depth: number
  description?: string
  callId?: string
  persona?: string
  tools?: { allow?: string[]; deny?: string[] }
  /** The preset the request named (the child's own log records the one it runs with). */
  preset?: string
  /** `isolation: worktree`: the branch and folder the child works in. */
  worktree?: { name: string; branch: string; path: string }
  model?: { [key: string]: JsonValue }
}

/** A run's report as the log keeps it. */
export interface SubagentFinishedData extends SubagentReport {
  /** Set on closers written at resume for a run the log never saw end. */
  synthetic?: true
}
