// The session event vocabulary and the on-disk shapes: header, envelope, surface ops, format version.
// Plugins add event types by declaration merging on `SessionEventMap` and, for cold resume, by
// declaring them at runtime with `ctx.sessions.defineEvent()`.
import type { JsonValue } from '@dsh/kernel'
import type { AssistantMessage, LlmCallConfig, ToolCallBlock, ToolResultMessage, UserMessage } from '@dsh/llm'

/** The session format version this build writes and the newest it reads. */
export const SESSION_FORMAT_VERSION = 0

/** The first line of every session: who it is, where it ran, what it was forked from. */
export interface SessionHeader {
  type: 'session'
  version: number
  id: string
  /** Milliseconds since the epoch. */
  createdAt: number
  cwd: string
  /** The session this one was forked from. */
  parentSession?: string
  /** How many events were copied from the parent (the child's `session/end-seed` has this seq). */
  seedLength?: number
}

/** `append` adds one node to the surface; `replace` hides surface nodes `[start, end]` (inclusive) behind one. */
export type SurfaceOp = { op: 'append' } | { op: 'replace'; start: number; end: number }

/** Why a turn ended. */
export type TurnEndReason = 'completed' | 'aborted' | 'blocked' | 'error' | 'max-tokens' | 'interrupted'

/**
 * The data of each event type. Extend it from another package with
 * `declare module '@dsh/session' { interface SessionEventMap { 'todo/set': { items: ... } } }`.
 */
export interface SessionEventMap {
  'turn/start': { turn?: number }
  'turn/end': { reason: TurnEndReason; message?: string }
  'step/start': { step?: number }
  'step/end': { reason?: string }
  'user/message': { message: UserMessage; origin?: string }
  'request/header': { config: LlmCallConfig; system?: string; tools?: JsonValue[]; reason?: string }
  'request/context': { contextWindow?: number; route?: string; [key: string]: JsonValue | undefined }
  'assistant/chunk': { chunk: JsonValue }
  'assistant/message': { message: AssistantMessage }
  'tool/call': { call: ToolCallBlock }
  'tool/result': { message: ToolResultMessage; code?: string; synthetic?: boolean }
  'agent/inbox/spliced': { [key: string]: JsonValue | undefined }
  'approval/asked': { [key: string]: JsonValue | undefined }
  'approval/decided': { [key: string]: JsonValue | undefined }
  'sandbox/mode': { mode: string; network?: string }
  'compaction/start': { [key: string]: JsonValue | undefined }
  'compaction/end': { [key: string]: JsonValue | undefined }
  'session/end-seed': { parentSession: string; seedLength: number }
}

export type SessionEventType = keyof SessionEventMap & string

/** The envelope of one event. `seq` is dense from 0; `time` is milliseconds since the epoch. */
export interface SessionEvent<T extends string = string> {
  type: T
  seq: number
  time: number
  data: T extends SessionEventType ? SessionEventMap[T] : JsonValue
  surfaceOp?: SurfaceOp
  /** Events of this log this one was derived from (chunks of a message, the call of a result...). */
  sourceEventSeqs?: number[]
  /** Set by writers of events that older readers may skip. */
  ignorable?: true
}

/** Any event as read from a log, whatever its type. */
export type AnySessionEvent = { [T in SessionEventType]: SessionEvent<T> }[SessionEventType] | SessionEvent<string>

/** Event types whose `data.message` may enter the model surface. */
export const SURFACE_TYPES: ReadonlySet<string> = new Set(['user/message', 'assistant/message', 'tool/result'])

/** The built-in vocabulary: what a reader of this build understands without any plugin. */
export const BUILTIN_EVENT_TYPES: readonly string[] = [
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'user/message',
  'request/header',
  'request/context',
  'assistant/chunk',
  'assistant/message',
  'tool/call',
  'tool/result',
  'agent/inbox/spliced',
  'approval/asked',
  'approval/decided',
  'sandbox/mode',
  'compaction/start',
  'compaction/end',
  'session/end-seed',
]

export const TURN_END_REASONS: readonly TurnEndReason[] = [
  'completed',
  'aborted',
  'blocked',
  'error',
  'max-tokens',
  'interrupted',
]

/** Options of one append. */
export interface AppendOptions {
  /** Required for surface types; forbidden for others. */
  surfaceOp?: SurfaceOp
  sourceEventSeqs?: number[]
  ignorable?: true
  /** Defaults to `Date.now()`; tests pin it. */
  time?: number
}
