// @dsh/surfaces/headless: the one-shot runner seam `ctx.headless`. A surface (the `dsh run` command) asks it
// to run one task to whole-agent idle; the provider row `@dsh/surfaces/headless/runner` does the work through
// `ctx.agents` and `ctx.sessions`, so a patch can replace how headless runs behave.
import { Service } from '@dsh/kernel'
import type { LlmCallConfig, LlmErrorData, Usage } from '@dsh/llm'
import type { SessionEvent, TurnEndReason } from '@dsh/session'
import type { SessionHost, SessionHostListeners } from '../host/index.js'

declare module 'cordis' {
  interface Context {
    headless: HeadlessRunner
  }
}

export interface HeadlessRunRequest {
  task: string
  cwd: string
  /** Files attached to the task (paths relative to `cwd`): images go to the attachment store, text is copied in. */
  attachments?: string[]
  model?: Partial<LlmCallConfig>
  /** Resume this durable session instead of starting a fresh one. */
  resume?: string
  /** Resume the most recently updated durable session whose cwd is `cwd`. */
  continue?: boolean
  /** Approval questions are answered allowed-once (true) or unavailable (false: nobody to ask). */
  yes?: boolean
  /**
   * The agent preset (`@dsh/presets`) of a new session (default: the presets row's default); on
   * `resume`/`continue` the session keeps its own, and another name is refused (`PRESET_LOCKED`).
   */
  preset?: string
  /** Sandbox/approval preset for the session (default: the agent preset's, else the policy row's). */
  permissionMode?: string
  /** Network of confined commands (`on` or `off`), recorded with the mode; default: the policy row's. */
  network?: string
  maxSteps?: number
  /** A cost budget in US dollars: the turn ends `blocked` before the request that would pass it. */
  maxCost?: number
  /** Turns before the runner cancels further work (a goal plugin may keep the agent going). */
  maxTurns?: number
  /** Aborting cancels the agent; the session stays resumable. */
  signal?: AbortSignal
  /** Every committed event of the run's session, in order (for stream-json and progress lines). */
  onEvent?: (event: SessionEvent) => void
  /** The run's session id, as soon as the session exists (before its first turn). */
  onSession?: (sessionId: string) => void
  /**
   * Hold approval questions and `ask_user` questions for someone to answer later (a background run
   * that `dsh attach` answers) instead of the static answer of `yes`: `listeners` hear them, and
   * `onHost` gets the host that holds them, with the session id, once the session exists.
   */
  ask?: { listeners: SessionHostListeners; onHost?: (host: SessionHost, sessionId: string) => void | Promise<void> }
}

export interface HeadlessRunResult {
  sessionId: string
  /** The reason of the last `turn/end` of the run (`aborted` when it never started a turn). */
  reason: TurnEndReason
  /** The last assistant text of the run ('' when there was none). */
  text: string
  /** `turn/end.message` of the last turn, when it has one. */
  message?: string
  /** The provider error behind an `error` ending, when there was one. */
  error?: LlmErrorData
  usage: Usage
  /** The run's cost: `usd` absent when no request had a known price; `text` as people read it (`unknown`). */
  cost: { usd?: number; text: string }
  turns: number
  /** Whether the run's events were made durable (false when no persistence row is active). */
  durable: boolean
  /** The calls whose approval was refused because nobody could be asked (without `--yes`). */
  refused: RefusedCall[]
  /**
   * True when the run started a new session and failed before any model answered (no key, an unknown
   * model, an unreachable endpoint): the session was deleted rather than left behind as clutter.
   */
  discarded?: boolean
}

/** One call of a headless run that needed approval and did not get it. */
export interface RefusedCall {
  /** The tool, when the question was about a tool call. */
  tool?: string
  /** The one line a person would have decided on (`Run \`npm test\``). */
  summary: string
  /** Why approval was needed (the policy's reason). */
  reason?: string
  /** The narrowest permission rule that would allow it (`Bash(npm test:*)`), when one is known. */
  rule?: string
}

/** The `ctx.headless` seam. */
export abstract class HeadlessRunner extends Service {
  /** Runs `request.task` to whole-agent idle and returns the outcome. Throws HarnessError for setup errors. */
  abstract run(request: HeadlessRunRequest): Promise<HeadlessRunResult>
}
