// The `dsh rpc` wire protocol: newline-delimited JSON-RPC 2.0 with named params over stdio. Plain
// types and constants only (no runtime imports), shared by the server row and the client SDKs.
import type { AnySessionEvent } from '@dsh/session'
import type { OperationName, OperationParams, OperationResult, RpcOperationName } from '../wire/operations.js'
import type { PendingApproval, PendingQuestion, PromptCommandOutcome, ResolvedModel } from '../wire/types.js'

export type * from '../wire/params.js'
export type * from '../wire/types.js'

/** The protocol version `initialize` negotiates. Bumped only for incompatible changes. */
export const RPC_PROTOCOL_VERSION = 1

/** JSON-RPC 2.0 error codes this protocol uses. Server errors carry `data.code`, a stable string. */
export const RpcErrorCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** A request the runtime refused; `data.code` says why (`NOT_INITIALIZED`, `SESSION_NOT_FOUND`, a HarnessError code...). */
  SERVER_ERROR: -32000,
} as const

export type JsonRpcId = string | number

export interface JsonRpcRequest {
  jsonrpc: '2.0'
  id: JsonRpcId
  method: string
  params?: Record<string, unknown>
}

export interface JsonRpcNotification {
  jsonrpc: '2.0'
  method: string
  params?: Record<string, unknown>
}

export interface JsonRpcErrorObject {
  code: number
  message: string
  data?: RpcErrorData
}

/** `data` of every error this server sends: a stable code, plus facts when a HarnessError caused it. */
export interface RpcErrorData {
  code: string
  facts?: Record<string, unknown>
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: JsonRpcId; result: unknown }
  | { jsonrpc: '2.0'; id: JsonRpcId | null; error: JsonRpcErrorObject }

// ---- requests (client -> server) ----

export interface InitializeParams {
  /** The client's protocol version; the server answers with its own. */
  protocolVersion?: number
  /** Working directory for sessions created without one (absolute, or relative to the server's cwd). */
  cwd?: string
  /** Default model routing of the sessions this connection creates. */
  provider?: string
  model?: string
  clientInfo?: { name: string; version?: string }
}

export interface InitializeResult {
  protocolVersion: number
  serverInfo: { name: string; version: string }
  /** The resolved working directory. */
  cwd: string
  /** What a session created without its own routing uses (the profile's defaults under this connection's routing). */
  model: ResolvedModel
  capabilities: {
    /** Whether sessions are durable (a persistence row is active): resume, list and fork need it. */
    persistence: boolean
    /** Whether approval questions reach this client (`approval/requested`). */
    approvals: boolean
    /** Whether the model's questions (the `ask_user` tool) reach this client (`question/requested`). */
    questions: boolean
  }
}

export type ShutdownParams = Record<string, never>
export type ShutdownResult = Record<string, never>

/** What an operation answers over RPC (a prompt never runs a /command there). */
type RpcResult<N extends OperationName> = Exclude<OperationResult<N>, PromptCommandOutcome>

/**
 * Every request method, its params and its result: `initialize` and `shutdown` (the connection's own)
 * plus every operation of the wire table (`../wire/operations.ts`) served over RPC.
 */
export type RpcMethods = {
  initialize: { params: InitializeParams; result: InitializeResult }
  shutdown: { params: ShutdownParams; result: ShutdownResult }
} & { [N in RpcOperationName]: { params: OperationParams<N>; result: RpcResult<N> } }

export type RpcMethod = keyof RpcMethods

// ---- notifications (server -> client) ----

/** A committed event of a live session (every session of the process; clients narrow by session tree). */
export interface SessionEventNotification {
  sessionId: string
  /** The session this one was forked from, when it was. */
  parentSessionId?: string
  /**
   * The committed envelope `{ type, seq, time, data, ... }` exactly as the durable log has it; testing
   * `type` narrows `data` (types no declaration names may come too: see @dsh/session).
   */
  event: AnySessionEvent
}

/**
 * Whole-agent status: `running` while the agent works, `idle` once it has nothing left to do. `idle`
 * is sent after the session's events were flushed, so an idle session is durable (with persistence).
 */
export interface AgentStatusNotification {
  sessionId: string
  agentId: string
  status: 'running' | 'idle'
}

/**
 * Agent lifecycle in the process. Agents this connection created are `root: true`; any other agent
 * (a subagent some plugin started) is `root: false`, with the session it works in.
 */
export type AgentLifecycleNotification =
  | { type: 'created'; agentId: string; sessionId: string; root: boolean; parentSessionId?: string }
  | { type: 'disposed'; agentId: string; sessionId: string; root: boolean }

/** The question was settled without this client's answer (cancelled turn, disconnect) or answered. */
export interface ApprovalSettledNotification {
  requestId: string
  decision: string
}

/** The question ended: answered, or cancelled with its turn or the connection. */
export interface QuestionSettledNotification {
  questionId: string
  status: 'answered' | 'cancelled'
}

/**
 * An edit of a watched patch file was handled (`dsh rpc --watch-config`): applied (`ok: true`, rows
 * added and removed), or refused (`ok: false`) with the last good configuration still running.
 */
export type ConfigChangedNotification = { ok: true; added: string[]; removed: string[] } | { ok: false; error: string }

export interface RpcNotifications {
  'session/event': SessionEventNotification
  'agent/status': AgentStatusNotification
  'agent/lifecycle': AgentLifecycleNotification
  'approval/requested': PendingApproval
  'approval/settled': ApprovalSettledNotification
  'question/requested': PendingQuestion
  'question/settled': QuestionSettledNotification
  'config/changed': ConfigChangedNotification
}

export type RpcNotificationMethod = keyof RpcNotifications
