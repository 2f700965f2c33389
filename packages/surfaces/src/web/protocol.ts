// The wire of `dsh web`: unary JSON bodies under /api and the frames of the two downlink-only
// WebSocket streams. The browser client imports these types; plain JSON data only.
import type { PresetSummary } from '../host/presets.js'
import type { HostedSession } from '../host/summaries.js'

export type { PresetSummary }

/** One row of the session list: the session host's row as it is (durable sessions plus live ones). */
export type SessionSummary = HostedSession

export type AgentStatus = HostedSession['status']

/** A queued inbox item as the client shows it (text only). */
export interface QueuedItem {
  id: string
  kind: string
  text: string
}

export interface InboxView {
  'next-step': QueuedItem[]
  'next-turn': QueuedItem[]
}

/** A background job of the session's agent (`ctx.jobs`); its output stays the model's to read. */
export interface JobView {
  id: string
  title: string
  status: string
  summary?: string
  startedAt: number
}

/** `GET /api/sessions/:id/jobs/:jobId/output?from=N`: output from byte `from`; the model's read cursor does not move. */
export interface JobOutputView {
  text: string
  /** The `from` of the next read. */
  next: number
  /** Bytes before `next` no longer readable (the job's output buffer dropped them). */
  lost: number
  status: string
  summary?: string
}

/** A pending approval question, as the browser shows it. */
export interface ApprovalView {
  requestId: string
  summary: string
  sessionId?: string
  toolCallId?: string
  toolName?: string
  kind?: string
  reason?: string
  details?: unknown
}

/** A pending question the model asked a person (`ask_user`), as the browser shows it. */
export interface QuestionView {
  questionId: string
  question: string
  options?: string[]
  sessionId?: string
  toolCallId?: string
}

/**
 * How the host handled an edit of a watched patch file (`dsh web --watch-config`): applied (rows
 * added/removed), or refused with the last good configuration kept and the reason.
 */
export type ConfigNotice = { ok: true; added: string[]; removed: string[] } | { ok: false; error: string }

/** One browser-side plugin in the host's manifest; `url` names the content hash (served immutable). */
export interface ClientModuleEntry {
  id: string
  hash: string
  url: string
}

/** Any committed session event (the durable envelope). */
export interface EventEnvelope {
  type: string
  seq: number
  time: number
  data: unknown
  surfaceOp?: unknown
  sourceEventSeqs?: number[]
}

export interface SessionHeaderView {
  id: string
  cwd: string
  createdAt: number
  parentSession?: string
  seedLength?: number
}

/** Frames of `/api/streams/host`. A baseline is always the first frame of a connection. */
export type HostFrame =
  | {
      type: 'host/baseline'
      sessions: SessionSummary[]
      approvals: ApprovalView[]
      questions: QuestionView[]
      /** Permission presets a session can be switched to (empty without a sandbox policy row). */
      modes: string[]
      /** Agent presets a new session can be created with, for the host's directory (empty without a presets row). */
      presets: PresetSummary[]
      /** The agent preset of sessions created without one. */
      defaultPreset?: string
      /** The directory new sessions start in unless the client chooses another (what `POST /api/sessions` sends by default). */
      defaultCwd: string
      /** The last `--watch-config` report, when an edit of a patch file was handled since start. */
      config?: ConfigNotice
      /** The client modules (browser-side plugins) the rows of the tree contribute. */
      clientModules: ClientModuleEntry[]
    }
  | { type: 'host/sessions'; sessions: SessionSummary[] }
  /** The manifest changed (a row that contributes a module was enabled, disabled or replaced). */
  | { type: 'host/client-modules'; modules: ClientModuleEntry[] }
  | { type: 'host/config'; config: ConfigNotice }
  | { type: 'approval/requested'; approval: ApprovalView }
  | { type: 'approval/settled'; requestId: string; decision: string }
  | { type: 'question/requested'; question: QuestionView }
  | { type: 'question/settled'; questionId: string; status: string }

/**
 * Frames of `/api/streams/session/:id?since=N`. The baseline carries every event with `seq >= since`
 * at the moment of subscription; live events follow with strictly increasing seq, so a client that
 * reconnects with `since = lastSeq + 1` sees each event exactly once.
 */
export type SessionFrame =
  | {
      type: 'session/baseline'
      header: SessionHeaderView
      since: number
      events: EventEnvelope[]
      status: AgentStatus
      inbox: InboxView
      /** The session's permission mode (absent without a sandbox policy row). */
      mode?: string
      /** The session's agent preset (absent without a presets row). */
      preset?: string
      jobs: JobView[]
    }
  | { type: 'session/event'; event: EventEnvelope }
  | { type: 'session/state'; status: AgentStatus; inbox: InboxView; mode?: string; preset?: string; jobs: JobView[] }
  | { type: 'session/error'; code: string; message: string }

/** The body of every refused or failed /api call. */
export interface ApiError {
  error: { code: string; message: string }
}

/** The answer of `prompt`: a queued message's receipt, or the outcome of a /command. */
export interface PromptResult {
  sessionId: string
  itemId?: string
  target?: string
  command?: { ok: boolean; name: string; text: string; code?: string }
}

export interface CreateSessionParams {
  cwd?: string
  /** The agent preset of the new session (one of the host baseline's `presets`); default `defaultPreset`. */
  preset?: string
}

export interface CreateSessionResult {
  sessionId: string
  cwd: string
  /** The preset the session runs with (absent without a presets row). */
  preset?: string
}
export interface TextParams {
  text: string
}
export interface InboxSpliceParams {
  target: 'next-step' | 'next-turn'
  start: number
  deleteCount: number
  texts?: string[]
}
export interface ApprovalRespondParams {
  decision: 'allowed-once' | 'rejected'
  reason?: string
}
export interface QuestionRespondParams {
  answer: string
}
export interface ModeParams {
  mode: string
}
export interface ForkParams {
  /** Last event seq to keep (default: the whole closed prefix). */
  at?: number
}

/** Settings as the browser may see them: which credentials are set, never their values. */
export interface SettingsView {
  credentials: Array<{ name: string; set: boolean; source?: string }>
  /** The declared settings (`dsh config list`), each with where its value came from; empty without a settings row. */
  settings: SettingView[]
}

/** One declared setting. Written with `PUT /api/settings/values/<key or path>` `{ value }` (the user file). */
export interface SettingView {
  key: string
  value: unknown
  source: 'default' | 'user' | 'project' | 'env' | 'flag'
  /** The file, variable or flag the value came from. */
  location?: string
  description: string
  env?: string
  allowed?: string
  /** Why the value in its layer is refused (the page shows it instead of failing). */
  problem?: string
}

/** `GET /api/models`: what `dsh models` lists, for the model pickers. */
export interface ModelsView {
  /** The default model (`provider:model`) of a call that names none, when one resolves. */
  current?: string
  /** Every routed provider; only usable ones (a key found, an endpoint configured) list their models. */
  providers: Array<{
    provider: string
    configured: boolean
    models: Array<{ id: string; contextWindow?: number; reasoning?: boolean }>
  }>
}

/** One hit of `GET /api/search?q=`: an event of a durable session whose text matched. */
export interface SearchHitView {
  sessionId: string
  /** The event's seq in that session's log (the page opens the session at it). */
  seq: number
  type: string
  /** The matching text with the matches in [brackets]. */
  snippet: string
  title?: string
  cwd?: string
}

/** `GET /api/workspaces`: directories sessions ran in, most recently used first. */
export interface WorkspacesView {
  workspaces: { cwd: string; sessions: number; updatedAt: number }[]
  /** Whether this client may start a session in another directory than the host's (loopback only). */
  canChoose: boolean
}
