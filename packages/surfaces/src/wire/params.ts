// The params of the table's operations under one name on every wire (read off their schemas).
import type { OperationParams } from './operations.js'

export type SessionCreateParams = OperationParams<'session/create'>
export type SessionResumeParams = OperationParams<'session/resume'>
export type SessionForkParams = OperationParams<'session/fork'>
export type SessionRewindParams = OperationParams<'session/rewind'>
export type SessionListParams = OperationParams<'session/list'>
export type PresetListParams = OperationParams<'preset/list'>
export type PromptParams = OperationParams<'prompt'>
export type CommandRunParams = OperationParams<'command/run'>
export type CancelParams = OperationParams<'cancel'>
export type ApprovalRespondParams = OperationParams<'approval/respond'>
export type ApprovalDecisionValue = ApprovalRespondParams['decision']
export type QuestionRespondParams = OperationParams<'question/respond'>

export type SessionRenameParams = OperationParams<'session/rename'>
export type SessionExportParams = OperationParams<'session/export'>
export type SessionModeParams = OperationParams<'session/mode'>
export type SessionPresetParams = OperationParams<'session/preset'>
export type InboxSpliceParams = OperationParams<'inbox/splice'>
export type JobOutputParams = OperationParams<'job/output'>
