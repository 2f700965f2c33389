// The `dsh rpc` wire protocol: newline-delimited JSON-RPC 2.0 with named params over stdio. Plain
// types and constants only (no runtime imports), shared by the server row and the client SDKs.
import type { ReasoningEffort } from '@dsh/llm'
import type { AnySessionEvent } from '@dsh/session'
import type { AttachmentInput, HostedSession, PresetSummary } from '../host/index.js'

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

/** Model routing: both optional; unset fields fall back to the profile's defaults. */
export interface ModelRoute {
  provider?: string
  model?: string
}

/** The model a session uses: provider and model resolved, with the reasoning effort when the provider has one. */
export interface ResolvedModel {
  provider: string
  model: string
  reasoningEffort?: ReasoningEffort
}

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

export interface SessionCreateParams extends ModelRoute {
  cwd?: string
  /** The agent preset (`preset/list` names them); default: the profile's (`code`). Logged in the session. */
  preset?: string
}

export interface SessionCreateResult {
  sessionId: string
  cwd: string
  /** The preset the session runs with (absent without a presets row). */
  preset?: string
}

export interface SessionResumeParams extends ModelRoute {
  sessionId: string
  /**
   * Must be the session's own preset, or absent: a session that already has turns keeps its preset
   * (error code `PRESET_LOCKED`).
   */
  preset?: string
}

export interface SessionResumeResult {
  sessionId: string
  cwd: string
  preset?: string
  /** Events in the session log after cold-resume repair. */
  eventCount: number
}

export interface PresetListParams {
  /** The project whose `.dsh/presets` count (default: the connection's cwd). */
  cwd?: string
}

export interface PresetListResult {
  data: PresetSummary[]
  /** The preset of sessions created without one. */
  default?: string
}

export interface SessionListParams {
  /** Opaque; the `nextCursor` of a previous page. */
  cursor?: string
  limit?: number
}

/** The session host's row without the live status (RPC reports status by notification instead). */
export type SessionSummary = Omit<HostedSession, 'status'>

export interface SessionListResult {
  data: SessionSummary[]
  nextCursor?: string
}

export interface SessionForkParams {
  sessionId: string
  /** The last event seq to keep (default: the whole log). Must end at a closed boundary. */
  at?: number
}

/** The fork is attached to this connection at once (prompt it like a created session). */
export interface SessionForkResult {
  sessionId: string
  parentSessionId: string
  cwd: string
}

export interface PromptParams {
  sessionId: string
  text: string
  /**
   * Files for this prompt: `{ path }` (read by the server, relative to the session's cwd) or
   * `{ data: <base64>, mimeType?, name? }`. Images are stored and sent as images; text is copied in.
   * `@path` and `@session:ID` in `text` are resolved too. Errors: `ATTACHMENT_*`.
   */
  attachments?: AttachmentInput[]
}

/** Returned as soon as the input is in the durable inbox, before the agent runs it. */
export interface PromptResult {
  sessionId: string
  /** The inbox item id (the `agent/inbox/spliced` item that carries this input). */
  messageId: string
  target: 'next-turn' | 'next-step'
}

export type SteerParams = PromptParams
export type SteerResult = PromptResult

/** A human /command (e.g. `/compact`, `/plan on`) for an attached session; no model turn runs. */
export interface CommandRunParams {
  sessionId: string
  line: string
}

/** The command's outcome; `ok: false` carries a stable `code` such as `COMMAND_UNKNOWN`. */
export interface CommandRunResult {
  sessionId: string
  ok: boolean
  name: string
  text: string
  code?: string
  data?: unknown
}

export interface CancelParams {
  sessionId: string
}

/** Sent once the agent is idle again. */
export interface CancelResult {
  sessionId: string
}

export type ApprovalDecisionValue = 'allowed-once' | 'rejected'

export interface ApprovalRespondParams {
  requestId: string
  decision: ApprovalDecisionValue
  /** Shown to the model when the action does not run. */
  reason?: string
}

export type ApprovalRespondResult = Record<string, never>

export interface QuestionRespondParams {
  questionId: string
  /** The person's answer (free text, or one of the question's options). */
  answer: string
}

export type QuestionRespondResult = Record<string, never>

export type ShutdownParams = Record<string, never>
export type ShutdownResult = Record<string, never>

/** Every request method, its params and its result. */
export interface RpcMethods {
  initialize: { params: InitializeParams; result: InitializeResult }
  'session/create': { params: SessionCreateParams; result: SessionCreateResult }
  'session/resume': { params: SessionResumeParams; result: SessionResumeResult }
  'session/list': { params: SessionListParams; result: SessionListResult }
  'session/fork': { params: SessionForkParams; result: SessionForkResult }
  'preset/list': { params: PresetListParams; result: PresetListResult }
  prompt: { params: PromptParams; result: PromptResult }
  steer: { params: SteerParams; result: SteerResult }
  cancel: { params: CancelParams; result: CancelResult }
  'command/run': { params: CommandRunParams; result: CommandRunResult }
  'approval/respond': { params: ApprovalRespondParams; result: ApprovalRespondResult }
  'question/respond': { params: QuestionRespondParams; result: QuestionRespondResult }
  shutdown: { params: ShutdownParams; result: ShutdownResult }
}

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

/** A question for the client; answer it with `approval/respond`. Settled as cancelled if the turn is. */
export interface ApprovalRequestedNotification {
  requestId: string
  sessionId?: string
  toolCallId?: string
  toolName?: string
  summary: string
  reason?: string
  kind?: string
  details?: unknown
}

/** The question was settled without this client's answer (cancelled turn, disconnect) or answered. */
export interface ApprovalSettledNotification {
  requestId: string
  decision: string
}

/** A question from the model (`ask_user`); answer it with `question/respond`. */
export interface QuestionRequestedNotification {
  questionId: string
  question: string
  /** Suggested answers; free text is accepted too. */
  options?: string[]
  sessionId?: string
  agentId?: string
  toolCallId?: string
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
  'approval/requested': ApprovalRequestedNotification
  'approval/settled': ApprovalSettledNotification
  'question/requested': QuestionRequestedNotification
  'question/settled': QuestionSettledNotification
  'config/changed': ConfigChangedNotification
}

export type RpcNotificationMethod = keyof RpcNotifications
