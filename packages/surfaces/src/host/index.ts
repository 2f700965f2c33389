// @dsh/surfaces/host: the wire-neutral session host. A surface creates one `SessionHost` per client
// scope (a web listener, an RPC or ACP connection, a headless run, a terminal UI) and maps its
// operations onto its wire; attaching, resuming, forking, listing, releasing, the pending approvals and
// questions, event subscriptions from a baseline seq and /command dispatch live here once.

export type { ExportFormat } from './export.js'
export { EXPORT_FORMATS, exportLines } from './export.js'
export type {
  AttachOptions,
  CreateOptions,
  Disposer,
  HostedStatus,
  PresetSummary,
  QuestionOutcome,
  SessionHostListeners,
  SessionHostOptions,
} from './host.js'
export { SessionHost } from './host.js'
export type { Pending } from './pending.js'
export type { AttachmentInput, ComposeOptions, PromptInput } from './prompt-input.js'
export { composePrompt, parseAttachments, referencesIn } from './prompt-input.js'
export type { RemoveReport } from './remove.js'
export { removeSessions } from './remove.js'
export type { EventSink, LoggedEvent, SessionSubscription } from './subscriptions.js'
export type { HostedSession } from './summaries.js'
export { titleOf } from './summaries.js'
export type { TranscriptFormat } from './transcript.js'
export { renderTranscript } from './transcript.js'
