// What a surface tells its session host, and what the host tells it back.
import type { Agent } from '@dsh/agent'
import type { ApprovalAnswer, ApprovalAnswerer, ApprovalQuestion } from '@dsh/agent/approval'
import type { AskedQuestion } from '@dsh/interaction'
import type { LlmCallConfig } from '@dsh/llm'
import type { QuestionOutcome } from './answers.js'
import type { Pending } from './pending.js'

/** `detached`: no agent of this host drives the session. */
export type HostedStatus = 'detached' | 'idle' | 'running'

/** Something to undo when a session is released (a per-session MCP client, a temp directory...). */
export type Disposer = () => unknown

export interface AttachOptions {
  model?: Partial<LlmCallConfig>
  /**
   * The session's preset (`@dsh/presets`). `create`: recorded in the new session (default: the presets
   * row's default). `resume` / `fork`: the session keeps its recorded preset; naming another one is
   * refused with `PRESET_LOCKED` once the session has turns of its own. Unknown: `PRESET_NOT_FOUND`.
   */
  preset?: string
  /** Bounds the agent's turns (a turn that reaches it ends `blocked`). */
  maxSteps?: number
  /** The session's cost budget in US dollars (`CreateAgentOptions.maxCost`). */
  maxCost?: number
  /**
   * Runs once the agent exists, before anyone else can reach it through the host: attach per-session
   * resources here. The returned disposer runs when the session is released or the host closes. A
   * throw releases the agent (and closes a restored session) and rejects the attach.
   */
  setup?: (agent: Agent) => undefined | Disposer | Promise<undefined | Disposer>
}

export interface CreateOptions extends AttachOptions {
  /** Working directory of the new session (default: the host's `cwd`). */
  cwd?: string
}

/** What the host tells its surface. Every callback is optional; none may throw. */
export interface SessionHostListeners {
  approvalRequested?(pending: Pending<ApprovalQuestion>): void
  approvalSettled?(requestId: string, answer: ApprovalAnswer): void
  questionRequested?(pending: Pending<AskedQuestion>): void
  questionSettled?(questionId: string, answer: QuestionOutcome): void
  /** A session's status, inbox, jobs or mode may have changed (called a microtask after the cause). */
  stateChanged?(sessionId: string): void
  /** The session list may have changed (attach, release, a phase change, a turn ended, a user message). */
  listChanged?(): void
}

export interface SessionHostOptions {
  /** Names the host in error messages ("the web host", "this connection"). */
  name: string
  /** Working directory of created sessions (default: the launcher's cwd, else the process's). */
  cwd?: string
  /** The cancel reason of agents still attached when the host closes, and of questions it drops. */
  closeReason: string
  /**
   * Hold approval questions for the client (default true); false leaves them to another answerer; an
   * answerer answers them for the whole host (a headless run's static answer), until it closes.
   */
  answerApprovals?: boolean | ApprovalAnswerer
  /** Hold `ask_user` questions for the client (default true when `ctx.userQuestions` is loaded). */
  answerQuestions?: boolean
  /** Diagnostics for a person (stderr). */
  log?: (line: string) => void
  on?: SessionHostListeners
}
