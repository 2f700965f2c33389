// The wire of `dsh web`: unary JSON bodies under /api and the frames of the two downlink-only
// WebSocket streams. The browser client imports these types; plain JSON data only.
// The unary calls are the web routes of the wire table (`../wire/operations.ts`); their params and
// results are the table's, under the names `../wire` exports.
import type {
  ClientModuleEntry,
  PendingApproval,
  PendingQuestion,
  PresetSummary,
  SessionSummary,
} from '../wire/types.js'

export type AgentStatus = SessionSummary['status']

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

/**
 * How the host handled an edit of a watched patch file (`dsh web --watch-config`): applied (rows
 * added/removed), or refused with the last good configuration kept and the reason.
 */
export type ConfigNotice = { ok: true; added: string[]; removed: string[] } | { ok: false; error: string }

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
      approvals: PendingApproval[]
      questions: PendingQuestion[]
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
  | { type: 'approval/requested'; approval: PendingApproval }
  | { type: 'approval/settled'; requestId: string; decision: string }
  | { type: 'question/requested'; question: PendingQuestion }
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
