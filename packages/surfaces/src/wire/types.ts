// The shapes every wire shares: results of the table's operations and the pending questions a client
// answers. Plain JSON data and types only; the SDK and the browser import them through
// `@dsh/surfaces/wire`.
import type { ReasoningEffort } from '@dsh/llm'
import type { BranchSummary, HostedSession, PresetSummary, SessionUsageView } from '../host/index.js'

export type { PresetSummary }

/** `session/usage`: the session's usage and cost (folded from its log) and its context use. */
export type SessionUsageResult = SessionUsageView

/** `session/compare`: a fork and its original, each from the fork point (`from`, a seq) on. */
export interface CompareResult {
  from: number
  original: BranchSummary
  fork: BranchSummary
}

/** One model request of a session, summed up (`session/steps`). */
export interface StepSummaryView {
  index: number
  /** The request header's seq. */
  seq: number
  model: string
  systemChars: number
  tools: string[]
  messages: number
  /** The last message the model read: its role and text. */
  last?: { role: string; text: string }
  answer: string
  calls: Array<{ id: string; name: string; args: string; result?: string; error?: boolean }>
}

export interface StepsResult {
  steps: StepSummaryView[]
}

/** One step whole (`session/step`): the exact request (system prompt, tool schemas, messages), answer, calls. */
export interface StepResult {
  index: number
  seq: number
  config: unknown
  system: string
  tools: unknown[]
  messages: unknown[]
  answer: string
  calls: StepSummaryView['calls']
}

/** `session/status-line`: the user's status line command's first line, or why there is none. */
export interface StatusLineResult {
  /** Whether `statusline.command` is set (nothing else is present when it is not). */
  configured: boolean
  text?: string
  error?: string
}

/** One row of the session list: the session host's row (durable sessions plus live ones, with status). */
export type SessionSummary = HostedSession

/** A row of the paged `session/list`: the host's row without the live status (RPC reports it by notification). */
export type SessionListRow = Omit<HostedSession, 'status'>

/** Model routing: both optional; unset fields fall back to the profile's (or the connection's) defaults. */
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

/**
 * A pending approval question, as every client sees it (the RPC `approval/requested` notification and
 * the web `approval/requested` frame carry this). Answer it with `approval/respond`.
 */
export interface PendingApproval {
  requestId: string
  summary: string
  sessionId?: string
  toolCallId?: string
  toolName?: string
  kind?: string
  reason?: string
  details?: unknown
  /** The narrowest permission rule covering the call: answer with `rule: { text, scope }` to keep it. */
  suggestedRule?: string
}

/** A pending question the model asked a person (`ask_user`); answer it with `question/respond`. */
export interface PendingQuestion {
  questionId: string
  question: string
  /** Suggested answers; free text is accepted too. */
  options?: string[]
  sessionId?: string
  agentId?: string
  toolCallId?: string
}

export interface SessionCreateResult {
  sessionId: string
  cwd: string
  /** The preset the session runs with (absent without a presets row). */
  preset?: string
}

export interface SessionResumeResult extends SessionCreateResult {
  /** Events in the session log after cold-resume repair. */
  eventCount: number
}

/** The fork is attached to this client at once (prompt it like a created session). */
export interface SessionForkResult {
  sessionId: string
  parentSessionId: string
  cwd: string
}

/** A message a rewind can go back to (`session/rewind-points`). */
export interface RewindPointView {
  number: number
  turnSeq: number
  time: number
  text: string
  /** The workspace checkpoint before the turn (absent: conversation only). */
  snapshot?: string
  end?: string
  /** What the turn changed, with line counts (absent for binary files); at most 200 listed. */
  changes: Array<{ path: string; kind: 'added' | 'modified' | 'deleted'; added?: number; removed?: number }>
  changed: number
  undone: boolean
}

export interface RewindPointsResult {
  points: RewindPointView[]
}

/** What a rewind did. `files.ok: false` with `code: REWIND_CONFLICT` changed nothing (`files.conflicts`). */
export interface SessionRewindResult {
  sessionId: string
  previousSessionId?: string
  point: number
  text?: string
  files?: {
    ok: boolean
    kind: 'rewind' | 'undo' | 'redo'
    code?: 'REWIND_CONFLICT' | 'REWIND_NOTHING'
    text: string
    written: string[]
    deleted: string[]
    conflicts: string[]
    overwritten: string[]
    notCaptured: string[]
    subagents: string[]
  }
}

export interface SessionListResult {
  data: SessionListRow[]
  nextCursor?: string
}

export interface PresetListResult {
  data: PresetSummary[]
  /** The preset of sessions created without one. */
  default?: string
}

/** The outcome of a human /command; `ok: false` carries a stable `code` such as `COMMAND_UNKNOWN`. */
export interface CommandRunResult {
  sessionId: string
  ok: boolean
  name: string
  text: string
  code?: string
  data?: unknown
}

/** A prompt's receipt: returned as soon as the input is in the durable inbox, before the agent runs it. */
export interface PromptReceipt {
  sessionId: string
  /** The inbox item id (the `agent/inbox/spliced` item that carries this input). */
  messageId: string
  target: 'next-turn' | 'next-step'
  command?: undefined
}

/** On the web a prompt whose text is a registered /command runs it instead (no turn, no log entry). */
export interface PromptCommandOutcome {
  sessionId: string
  command: CommandRunResult
  messageId?: undefined
  target?: undefined
}

export type PromptResult = PromptReceipt | PromptCommandOutcome

/** Sent once the agent is idle again. */
export interface CancelResult {
  sessionId: string
}

/** `job/output`: output from byte `from`; the model's read cursor does not move. */
export interface JobOutputView {
  text: string
  /** The `from` of the next read. */
  next: number
  /** Bytes before `next` no longer readable (the job's output buffer dropped them). */
  lost: number
  status: string
  summary?: string
}

/** A file a call answers with (`session/export`): the web serves it as a download, RPC as this object. */
export interface WireFile {
  name: string
  type: string
  text: string
}

/** One hit of `session/search`: an event of a durable session whose text matched. */
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

/** One browser-side plugin in the host's manifest; `url` names the content hash (served immutable). */
export interface ClientModuleEntry {
  id: string
  hash: string
  url: string
}

/** A folder's gated configuration as `trust/status` and `trust/grant` answer it. */
export interface FolderTrustView {
  folder: string
  /** The folder was trusted once (some items may have changed since: see each item). */
  trusted: boolean
  items: Array<{ kind: string; path: string; summary: string; admitted: boolean }>
}
