// The in-memory log of one session: accepted events, the model surface with its incremental message
// projection, and the turn/step/tool-call structure that fork and cold resume reason about.
// Pure data structure; the Cordis service in index.ts owns emission and lifetimes.
import { freezeTree, HarnessError, type JsonValue } from '@dsh/kernel'
import type { Message } from '@dsh/llm'
import {
  type AnySessionEvent,
  type AppendOptions,
  isSurfaceEvent,
  SESSION_FORMAT_VERSION,
  type SessionEvent,
  type SessionHeader,
  SURFACE_TYPES,
  type SurfaceEvent,
  type SurfaceOp,
  TURN_END_REASONS,
  type UnknownSessionEvent,
} from './events.js'
import { cloneJson, JsonFailure } from './json.js'
import { RequestContents, type RequestRecord } from './request.js'

/** What a reader knows about event types: the known set and whether unknown ones may be skipped. */
export interface Vocabulary {
  has(type: string): boolean
}

/** A tool call the model asked for that has no result yet. */
export interface PendingCall {
  id: string
  name: string
  /** The `assistant/message` that asked for it. */
  requestSeq?: number
  /** The `tool/call` that logged it, when there is one. */
  callSeq?: number
}

/** Where the log stands structurally: what a closed prefix must not have. */
export interface OpenTail {
  turn?: number
  step?: number
  calls: PendingCall[]
}

/** Thrown by checks; `where` names the session file in the message when known. */
function corrupt(message: string, where: string | undefined, facts: Record<string, unknown>): HarnessError {
  return new HarnessError('SESSION_CORRUPT', where ? `${where}: ${message}` : message, {
    ...facts,
    file: where ?? null,
  })
}

function invalid(message: string, facts: Record<string, unknown>): HarnessError {
  return new HarnessError('SESSION_EVENT_INVALID', message, facts)
}

const ENVELOPE_KEYS = new Set(['type', 'seq', 'time', 'data', 'surfaceOp', 'sourceEventSeqs', 'ignorable'])
const ROLE_OF: Record<string, string> = {
  'user/message': 'user',
  'assistant/message': 'assistant',
  'tool/result': 'tool',
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Checks a header read from a file. Throws SESSION_FORMAT_UNSUPPORTED or SESSION_CORRUPT. */
export function checkHeader(raw: unknown, where?: string, expectedId?: string): SessionHeader {
  if (!isObject(raw) || raw.type !== 'session') throw corrupt('the first record is not a session header', where, {})
  const { version, id, createdAt, cwd, parentSession, seedLength } = raw
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 0) {
    throw corrupt('the header has no integer format version', where, { version: version as JsonValue })
  }
  if (version > SESSION_FORMAT_VERSION) {
    throw new HarnessError(
      'SESSION_FORMAT_UNSUPPORTED',
      `${where ?? 'session'}: format version ${version} is newer than this dsh reads (${SESSION_FORMAT_VERSION}); upgrade dsh to open it`,
      { file: where ?? null, version, supported: SESSION_FORMAT_VERSION },
    )
  }
  if (typeof id !== 'string' || id === '') throw corrupt('the header has no id', where, {})
  if (expectedId !== undefined && id !== expectedId) {
    throw corrupt(`the header names session ${id}, expected ${expectedId}`, where, { id, expectedId })
  }
  if (typeof createdAt !== 'number' || !Number.isFinite(createdAt)) throw corrupt('bad header createdAt', where, {})
  if (typeof cwd !== 'string') throw corrupt('bad header cwd', where, {})
  if (parentSession !== undefined && typeof parentSession !== 'string') throw corrupt('bad parentSession', where, {})
  if (seedLength !== undefined && (typeof seedLength !== 'number' || !Number.isInteger(seedLength) || seedLength < 0)) {
    throw corrupt('bad seedLength', where, {})
  }
  for (const key of Object.keys(raw)) {
    if (!['type', 'version', 'id', 'createdAt', 'cwd', 'parentSession', 'seedLength'].includes(key)) {
      throw corrupt(`unknown header field "${key}"`, where, { key })
    }
  }
  return raw as unknown as SessionHeader
}

/**
 * The log of one session. `append` validates, clones into frozen JSON and updates the surface and
 * structure in O(size of the event); `deriveMessages` is incremental on append and rebuilt on replace.
 */
export class SessionLog {
  readonly header: Readonly<SessionHeader>
  readonly #events: AnySessionEvent[] = []
  readonly #vocabulary: Vocabulary
  /** Event seqs currently on the model surface, in surface order. */
  #surface: number[] = []
  /** Bumped by every replace; the message cache is rebuilt when it moved. */
  #generation = 0
  #cache: Message[] = []
  #cacheGeneration = 0
  #cacheNodes = 0
  readonly #transcript: AnySessionEvent[] = []
  #openTurn: number | undefined
  #openStep: number | undefined
  readonly #pending = new Map<string, PendingCall>()
  readonly #requests = new RequestContents()

  constructor(header: SessionHeader, vocabulary: Vocabulary) {
    this.header = Object.freeze({ ...header })
    this.#vocabulary = vocabulary
  }

  get events(): readonly AnySessionEvent[] {
    return this.#events
  }

  get length(): number {
    return this.#events.length
  }

  /** Bumped by every surface replacement. */
  get generation(): number {
    return this.#generation
  }

  /** Event seqs on the current model surface, in order. */
  surface(): readonly number[] {
    return this.#surface
  }

  /**
   * Validates and appends one event; returns the frozen envelope. Throws SESSION_EVENT_INVALID for an
   * unknown type (unless `ignorable`), non-JSON data, a missing/forbidden/out-of-range surface op.
   */
  append(type: string, data: unknown, options: AppendOptions = {}): AnySessionEvent {
    const seq = this.#events.length
    const cloned = cloneJson(data)
    if (cloned instanceof JsonFailure) throw invalid(`${type}: ${cloned.error}`, { type, seq })
    const event: Record<string, unknown> = { type, seq, time: options.time ?? Date.now(), data: cloned }
    if (options.surfaceOp) event.surfaceOp = Object.freeze({ ...options.surfaceOp })
    if (options.sourceEventSeqs) event.sourceEventSeqs = Object.freeze([...options.sourceEventSeqs])
    if (options.ignorable) event.ignorable = true
    const frozen = Object.freeze(event) as unknown as UnknownSessionEvent
    const problem = this.#check(frozen)
    if (problem) throw invalid(`${type} (seq ${seq}): ${problem}`, { type, seq })
    // Checked: a declared type has the structure #check verified; an undeclared one is opaque.
    const accepted = frozen as unknown as AnySessionEvent
    this.#accept(accepted)
    return accepted
  }

  /**
   * Accepts an event read from durable storage. Throws SESSION_CORRUPT for a malformed envelope or
   * surface transition and SESSION_FORMAT_UNSUPPORTED for an unknown event that is not ignorable.
   * `raw` must be fresh JSON.parse output (it is frozen in place, not cloned).
   */
  load(raw: unknown, where?: string): void {
    const seq = this.#events.length
    if (!isObject(raw)) throw corrupt(`record ${seq} is not an event envelope`, where, { seq })
    for (const key of Object.keys(raw)) {
      if (!ENVELOPE_KEYS.has(key)) throw corrupt(`event ${seq} has unknown field "${key}"`, where, { seq, key })
    }
    if (raw.seq !== seq) throw corrupt(`event ${seq} has seq ${String(raw.seq)}`, where, { seq })
    if (typeof raw.type !== 'string' || raw.type === '') throw corrupt(`event ${seq} has no type`, where, { seq })
    if (typeof raw.time !== 'number' || !Number.isFinite(raw.time))
      throw corrupt(`event ${seq} has no time`, where, { seq })
    if (!('data' in raw)) throw corrupt(`event ${seq} has no data`, where, { seq })
    if (raw.ignorable !== undefined && raw.ignorable !== true)
      throw corrupt(`event ${seq}: bad ignorable`, where, { seq })
    if (!this.#vocabulary.has(raw.type) && raw.ignorable !== true) {
      throw new HarnessError(
        'SESSION_FORMAT_UNSUPPORTED',
        `${where ?? 'session'}: event ${seq} has type "${raw.type}", which this dsh does not know and which is not marked ignorable; load the plugin that defines it or upgrade dsh`,
        { file: where ?? null, seq, type: raw.type },
      )
    }
    const problem = this.#check(raw as unknown as UnknownSessionEvent)
    if (problem) throw corrupt(`event ${seq} (${raw.type}): ${problem}`, where, { seq, type: raw.type })
    this.#accept(freezeTree(raw) as unknown as AnySessionEvent)
  }

  /** The structural problem of `event` against the current state, or undefined when it is fine. */
  #check(event: UnknownSessionEvent): string | undefined {
    const { type, surfaceOp, sourceEventSeqs } = event
    const data: unknown = event.data
    if (!this.#vocabulary.has(type)) return event.ignorable ? undefined : `unknown event type "${type}"`
    if (sourceEventSeqs !== undefined) {
      if (!Array.isArray(sourceEventSeqs)) return 'sourceEventSeqs is not an array'
      for (const s of sourceEventSeqs) {
        if (!Number.isInteger(s) || s < 0 || s >= event.seq) return `sourceEventSeqs names ${s}, not an earlier event`
      }
    }
    if (!isObject(data)) return 'data is not an object'
    if (SURFACE_TYPES.has(type)) {
      const message = data.message
      if (!isObject(message) || message.role !== ROLE_OF[type] || !Array.isArray(message.content)) {
        return `data.message is not a ${ROLE_OF[type]} message`
      }
      if (type === 'tool/result' && typeof message.toolCallId !== 'string') return 'tool result without toolCallId'
      for (const block of message.content as unknown[]) {
        if (!isObject(block) || typeof block.type !== 'string') return 'a content block has no type'
        if (block.type === 'tool-call' && (typeof block.id !== 'string' || typeof block.name !== 'string')) {
          return 'a tool-call block needs a string id and name'
        }
      }
      if (!isObject(surfaceOp)) return 'a model-visible event needs a surfaceOp'
      if (surfaceOp.op === 'append') {
        if (Object.keys(surfaceOp).length !== 1) return 'append takes no range'
      } else if (surfaceOp.op === 'replace') {
        const { start, end } = surfaceOp as { start: unknown; end: unknown }
        if (!Number.isInteger(start) || !Number.isInteger(end)) return 'replace needs integer start and end'
        if ((start as number) < 0 || (start as number) > (end as number) || (end as number) >= this.#surface.length) {
          return `replace [${start}, ${end}] is outside the surface of ${this.#surface.length} nodes`
        }
      } else return `unknown surface op "${String((surfaceOp as { op?: unknown }).op)}"`
    } else if (surfaceOp !== undefined) return 'only user/message, assistant/message and tool/result take a surfaceOp'
    if (type === 'turn/end' && !TURN_END_REASONS.includes(data.reason as never)) return `bad turn/end reason`
    if (type === 'tool/call') {
      const call = data.call
      if (!isObject(call) || typeof call.id !== 'string' || typeof call.name !== 'string') return 'bad tool call'
    }
    if (type === 'session/end-seed' && (typeof data.parentSession !== 'string' || !Number.isInteger(data.seedLength))) {
      return 'bad end-seed'
    }
    if (type === 'request/header') return this.#requests.check(data)
    return undefined
  }

  #accept(event: AnySessionEvent): void {
    this.#events.push(event)
    switch (event.type) {
      case 'request/header':
        this.#requests.accept(event.data)
        break
      case 'turn/start':
        this.#openTurn = event.seq
        break
      case 'turn/end':
        this.#openTurn = undefined
        this.#openStep = undefined
        break
      case 'step/start':
        this.#openStep = event.seq
        break
      case 'step/end':
        this.#openStep = undefined
        break
      case 'assistant/message':
        for (const block of event.data.message.content) {
          if (block.type === 'tool-call' && !this.#pending.has(block.id)) {
            this.#pending.set(block.id, { id: block.id, name: block.name, requestSeq: event.seq })
          }
        }
        break
      case 'tool/call': {
        const call = event.data.call
        const known = this.#pending.get(call.id)
        this.#pending.set(call.id, { id: call.id, name: call.name, ...known, callSeq: event.seq })
        break
      }
      case 'tool/result':
        this.#pending.delete(event.data.message.toolCallId)
        break
    }
    const op = event.surfaceOp
    if (!op || !isSurfaceEvent(event)) return
    if (op.op === 'append') {
      this.#surface.push(event.seq)
      this.#transcript.push(event)
    } else {
      this.#surface.splice(op.start, op.end - op.start + 1, event.seq)
      this.#generation++
    }
  }

  /**
   * The `request/header` data that records `request`: the system prompt and tools by hash, with their
   * bodies only when this log does not hold them yet. Append it as `request/header`.
   */
  requestHeader(request: RequestRecord): SessionEvent<'request/header'>['data'] {
    return this.#requests.compose(request)
  }

  /**
   * The request the `request/header` at `seq` records, bodies resolved from the log. Throws
   * SESSION_EVENT_INVALID when `seq` is not a request header.
   */
  requestOf(seq: number): RequestRecord {
    const event = this.#events[seq]
    if (event?.type !== 'request/header') {
      throw invalid(`event ${seq} is not a request/header`, { seq, type: event?.type ?? null })
    }
    return this.#requests.resolve((event as SessionEvent<'request/header'>).data)
  }

  /**
   * The messages of the current surface, for the next model request. Incremental: an append costs
   * O(new nodes); a replacement rebuilds once. The returned array is live and grows with later
   * appends; freeze it (or copy it) to keep a snapshot: a frozen result is never mutated, the next
   * append copies instead (copy-on-freeze).
   */
  deriveMessages(): readonly Message[] {
    if (this.#cacheGeneration !== this.#generation) {
      this.#cache = []
      this.#cacheNodes = 0
      this.#cacheGeneration = this.#generation
    } else if (Object.isFrozen(this.#cache) && this.#cacheNodes < this.#surface.length) {
      this.#cache = [...this.#cache]
    }
    for (; this.#cacheNodes < this.#surface.length; this.#cacheNodes++) {
      const event = this.#events[this.#surface[this.#cacheNodes] as number] as SurfaceEvent
      const message: Message = event.data.message
      if (message.role === 'assistant' && message.content.length === 0) continue
      this.#cache.push(message)
    }
    return this.#cache
  }

  /** The user transcript: every append-origin model-visible event, in log order (replacements never hide these). */
  transcript(): readonly AnySessionEvent[] {
    return this.#transcript
  }

  /** The open turn, open step and calls without a result at the end of the log. */
  openTail(): OpenTail {
    return { turn: this.#openTurn, step: this.#openStep, calls: [...this.#pending.values()] }
  }

  /** True when the log ends on a closed boundary: no open turn or step, no call without a result. */
  isClosed(): boolean {
    return this.#openTurn === undefined && this.#openStep === undefined && this.#pending.size === 0
  }
}

/** The naive fold the incremental projection must equal: replay every surface op from scratch. */
export function foldMessages(events: readonly SessionEvent[]): Message[] {
  let surface: SurfaceEvent[] = []
  for (const event of events) {
    const op = event.surfaceOp
    if (!op || !isSurfaceEvent(event)) continue
    if (op.op === 'append') surface = [...surface, event]
    else surface = [...surface.slice(0, op.start), event, ...surface.slice(op.end + 1)]
  }
  return surface
    .map((event): Message => event.data.message)
    .filter((message) => !(message.role === 'assistant' && message.content.length === 0))
}

export type { SurfaceOp }
