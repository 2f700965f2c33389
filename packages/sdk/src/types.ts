// The types of the TypeScript client of `dsh rpc`: its options, its errors, what `run` answers and
// the handlers of the questions the runtime asks. Wire shapes come from `@dsh/surfaces/wire`.
import type {
  ApprovalDecisionValue,
  InitializeParams,
  JsonRpcErrorObject,
  PendingApproval,
  PendingQuestion,
  RpcNotifications,
  SessionEventNotification,
} from '@dsh/surfaces/wire'

export interface DshClientOptions {
  /** The `dsh` CLI entry (a .js file run with this Node, or an executable). Default: the installed `@dsh/cli` bin. */
  cliPath?: string
  /** Arguments before `rpc` (global options such as `--profile`, `--patch FILE`). */
  args?: string[]
  /** Working directory of the runtime process and the default `initialize.cwd`. */
  cwd?: string
  /** Environment of the runtime (default: this process's). */
  env?: NodeJS.ProcessEnv
  /** `initialize` parameters (cwd, provider/model routing, protocol version). */
  initialize?: InitializeParams
  /** The runtime's stderr, line by line (default: dropped). */
  onStderr?: (line: string) => void
  /** How long `close()` waits at each step of its ladder before the next (default 3000 ms). */
  closeStepMs?: number
}

/** A JSON-RPC error answered by the runtime (or a transport failure, code -32099). */
export class DshRpcError extends Error {
  readonly code: number
  readonly data: JsonRpcErrorObject['data']
  constructor(error: JsonRpcErrorObject) {
    super(error.message)
    this.name = 'DshRpcError'
    this.code = error.code
    this.data = error.data
  }
}

/** The outcome of `run()`: see `DshClient.run` for exactly which interval it covers. */
export interface RunResult {
  sessionId: string
  /** The inbox message id of the prompt (the receipt). */
  messageId: string
  /** The last committed assistant text of the root session in the interval ('' when none). */
  text: string
  /** The reason of the last `turn/end` of the root session in the interval, when one ended. */
  reason?: string
  /** Every committed event of the session tree in the interval, in order. */
  events: SessionEventNotification[]
}

export type DshNotification = {
  [M in keyof RpcNotifications]: { method: M; params: RpcNotifications[M] }
}[keyof RpcNotifications]

export interface SubscribeOptions {
  /** Only notifications about this session and its descendants (forks, subagent sessions). */
  sessionId?: string
}

/** A permission rule kept with an allow ("allow similar"): usually the request's `suggestedRule`. */
export interface KeptRule {
  text: string
  scope: 'session' | 'user' | 'project'
}

/** An answer with a reason; with `allowed-once`, `grant` (this session, same tool) or `rule` may stand. */
export interface ApprovalReply {
  decision: ApprovalDecisionValue
  reason?: string
  grant?: 'session'
  rule?: KeptRule
}

/** Answers an approval question; return `undefined` to leave it for `respondApproval`. */
export type ApprovalHandler = (
  request: PendingApproval,
) => ApprovalDecisionValue | ApprovalReply | undefined | Promise<ApprovalDecisionValue | ApprovalReply | undefined>

/** Answers a question from the model (`ask_user`); return `undefined` to leave it for `respondQuestion`. */
export type QuestionHandler = (request: PendingQuestion) => string | undefined | Promise<string | undefined>
