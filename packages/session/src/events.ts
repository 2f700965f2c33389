// The session event vocabulary and the on-disk shapes: header, envelope, surface ops, format version.
// Plugins add event types by declaration merging on `SessionEventMap` and, for cold resume, by
// declaring them at runtime with `ctx.sessions.defineEvent()`.
import type { JsonValue } from '@dsh/kernel'
import type {
  AssistantMessage,
  LlmCallConfig,
  RequestCost,
  StreamChunk,
  ToolCallBlock,
  ToolResultMessage,
  ToolSchema,
  UserMessage,
} from '@dsh/llm'

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
 * The data of each event type this package owns. Another package declares its own events where it
 * owns them, by declaration merging:
 * `declare module '@dsh/session' { interface SessionEventMap { 'todo/write': { todos: TodoItem[] } } }`
 * (see the README, "A new session event"). Built-in types declared elsewhere: `approval/*`
 * (@dsh/agent/approval), `agent/inbox/spliced` (@dsh/agent), `sandbox/mode` (@dsh/world/sandbox),
 * `compaction/*` (@dsh/context).
 */
export interface SessionEventMap {
  'turn/start': { turn?: number }
  'turn/end': { reason: TurnEndReason; message?: string }
  'step/start': { step?: number }
  'step/end': { reason?: string }
  /** `origin` names who added input the person did not type (`context`, `compaction`, `goal`...). */
  'user/message': { message: UserMessage; origin?: string }
  /**
   * What the next model request is made of: the call config, the system prompt and the tool schemas.
   * Bodies are stored by content: `systemHash`/`toolsHash` name them, and a body is carried only by
   * the first header of the log with that hash (`session.requestOf(seq)` resolves a header whole).
   * Headers without hashes (older logs) carry their bodies every time.
   */
  'request/header': {
    config: LlmCallConfig
    system?: string
    systemHash?: string
    tools?: readonly ToolSchema[]
    toolsHash?: string
    reason?: string
  }
  'request/context': { contextWindow?: number }
  'assistant/chunk': { chunk: StreamChunk }
  /** `cost`: present when the message carries usage; its `usd` absent when the model's price is unknown. */
  'assistant/message': { message: AssistantMessage; cost?: RequestCost }
  'tool/call': { call: ToolCallBlock }
  /** `code` and `synthetic` mark results the harness wrote (repairs, pruned outputs). */
  'tool/result': { message: ToolResultMessage; code?: string; synthetic?: boolean }
  'session/end-seed': { parentSession: string; seedLength: number }
}

/** Every event type declared in this program (this package's and every merged declaration). */
export type SessionEventType = keyof SessionEventMap & string

/** The fields every envelope has, whatever its type. */
interface Envelope {
  seq: number
  time: number
  surfaceOp?: SurfaceOp
  /** Events of this log this one was derived from (chunks of a message, the call of a result...). */
  sourceEventSeqs?: number[]
  /** Set by writers of events that older readers may skip. */
  ignorable?: true
}

/** The envelope of one declared event type. */
export interface TypedSessionEvent<T extends SessionEventType> extends Envelope {
  type: T
  data: SessionEventMap[T]
}

/**
 * The envelope of an event of type `T` (a union of types gives a union of envelopes, so testing
 * `type` narrows `data`). `seq` is dense from 0; `time` is milliseconds since the epoch.
 */
export type SessionEvent<T extends SessionEventType = SessionEventType> = { [K in T]: TypedSessionEvent<K> }[T]

/**
 * A declared event, discriminated by `type`. A log may also hold events no declaration in this
 * program names (another plugin's extension, an ignorable event of a newer writer): those never
 * equal a declared type, so narrowing is sound, but a switch over this union is not exhaustive.
 */
export type AnySessionEvent = SessionEvent

/** An event whose type is outside the declared map, e.g. read by a tool that loads no plugin. */
export interface UnknownSessionEvent extends Envelope {
  type: string
  data: JsonValue
}

/**
 * Whether `event` has one of `types`; narrows `data` to the declared payload:
 * `if (isEvent(e, 'tool/call')) e.data.call.name`. Works on any envelope, including wire copies.
 */
export function isEvent<T extends SessionEventType>(
  event: { readonly type: string } | undefined,
  ...types: T[]
): event is SessionEvent<T> {
  if (event === undefined) return false
  return types.length === 1 ? event.type === types[0] : (types as string[]).includes(event.type)
}

/** The payloads of every event of `type` in `events`, in log order. */
export function eventData<T extends SessionEventType>(
  events: readonly { readonly type: string }[],
  type: T,
): SessionEventMap[T][] {
  const out: SessionEventMap[T][] = []
  for (const event of events) if (isEvent(event, type)) out.push(event.data)
  return out
}

/** The events whose `data.message` enters the model surface. */
export type SurfaceEvent = SessionEvent<'user/message' | 'assistant/message' | 'tool/result'>

/** Event types whose `data.message` may enter the model surface. */
export const SURFACE_TYPES: ReadonlySet<string> = new Set(['user/message', 'assistant/message', 'tool/result'])

/** Whether `event` is one whose `data.message` may enter the model surface. */
export function isSurfaceEvent(event: { readonly type: string } | undefined): event is SurfaceEvent {
  return event !== undefined && SURFACE_TYPES.has(event.type)
}

/**
 * The built-in vocabulary: what a reader of this build accepts without any plugin. It includes types
 * whose payloads other packages declare (approval, inbox, sandbox, compaction): a log holding them
 * must open in a process that loads none of those packages (`dsh sessions show`, a plain resume).
 */
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
