// @dsh/surfaces/host: the wire-neutral session host. A surface creates one `SessionHost` per client
// scope (a web listener, an RPC or ACP connection, a headless run, a terminal UI) and maps its
// operations onto its wire; attaching, resuming, forking, listing, releasing, the pending approvals and
// questions, event subscriptions from a baseline seq and /command dispatch live here once.

export type { HostAccess } from './access.js'
export { type ActivityPhase, type SessionActivity, sessionActivity } from './activity.js'
export {
  type AgentKind,
  type AgentRow,
  type AgentStateName,
  agentLines,
  agentNamed,
  heldElsewhere,
  listAgents,
  stopAgent,
} from './agents.js'
export type { AnswersOptions, QuestionOutcome } from './answers.js'
export { HostAnswers } from './answers.js'
export { type BackgroundRecord, backgroundDir, readBackgroundRecords } from './background-records.js'
export { alignColumns } from './columns.js'
export { HostCommands } from './commands.js'
export { type BranchSummary, summarizeBranch } from './compare.js'
export type { ExportFormat } from './export.js'
export { EXPORT_FORMATS, exportLines, exportSession } from './export.js'
export { type HostRewind, SessionHost } from './host.js'
export { HostJobs } from './jobs.js'
export { HostModes } from './modes.js'
export type {
  AttachOptions,
  CreateOptions,
  Disposer,
  HostedStatus,
  SessionHostListeners,
  SessionHostOptions,
} from './options.js'
export type { Pending } from './pending.js'
export type { PresetSummary } from './presets.js'
export { HostPresets } from './presets.js'
export type { AttachmentInput, ComposeOptions, PromptInput } from './prompt-input.js'
export { composePrompt, parseAttachments, referencesIn } from './prompt-input.js'
export type { RemoveReport } from './remove.js'
export { removeSessions } from './remove.js'
export type { EventSink, LoggedEvent, SessionSubscription } from './subscriptions.js'
export type { HostedSession } from './summaries.js'
export { titleOf } from './summaries.js'
export { checkTitle } from './title.js'
export type { TranscriptFormat } from './transcript.js'
export { renderTranscript, turnEndedText } from './transcript.js'
export type { ContextUse, SessionUsageView } from './usage.js'
export { contextUse, nextModel, statusLineOf, usageView } from './usage.js'
