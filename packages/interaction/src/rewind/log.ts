// What rewind reads off a session log: the points a person can go back to (each turn that began with
// a message they typed), the workspace checkpoints around each turn, and which file changes earlier
// rewinds already took back. Pure functions over events, so resume, fork and replay see the same.
import { isEvent, type SessionEventMap } from '@dsh/session'
import type { SkippedFile, SnapshotChange } from '@dsh/world/snapshots'

/** `checkpoint/taken`: the workspace before (`turn-start`) or after (`turn-end`) a turn touched it. */
export interface CheckpointTaken {
  at: 'turn-start' | 'turn-end'
  /** The snapshot id (`ctx.snapshots`). */
  snapshot: string
  files: number
  /** Files over the size limit: not captured, so a rewind never touches them. */
  skipped?: SkippedFile[]
  ms: number
  /** `turn-end` only: what the turn changed (at most 200 listed; `changed` counts them all). */
  changes?: SnapshotChange[]
  changed?: number
}

/** `checkpoint/unavailable`: why this turn has no checkpoint (logged when the reason changes). */
export interface CheckpointUnavailable {
  code: string
  reason: string
}

export type RewindKind = 'rewind' | 'undo' | 'redo'

/** `rewind/started`: logged (and flushed) before the first file is written back. */
export interface RewindStarted {
  kind: RewindKind
  /** The snapshot the files go back to. */
  to: string
  /** The workspace just before (what `/redo` brings back). */
  before: string
  paths: string[]
  /** The point (user message number) for `rewind` and `undo`. */
  point?: number
  /** For `redo`: the seq of the `rewind/applied` it takes back. */
  of?: number
}

/** `rewind/applied`: the restore finished; `after` is the workspace now. */
export interface RewindApplied extends RewindStarted {
  after: string
  written: string[]
  deleted: string[]
  /** Files changed by someone else since the session last saw them, overwritten on request. */
  overwritten: string[]
  /** Subagent sessions that ran in the span (their changes are part of it). */
  subagents: string[]
  /** Copied into a conversation fork (`both`) from the session the files were restored under. */
  from?: string
}

/** `rewind/interrupted`: a restore did not finish (the process died); which files came back. */
export interface RewindInterrupted {
  startedSeq: number
  restored: string[]
  notRestored: string[]
}

declare module '@dsh/session' {
  interface SessionEventMap {
    'checkpoint/taken': CheckpointTaken
    'checkpoint/unavailable': CheckpointUnavailable
    'rewind/started': RewindStarted
    'rewind/applied': RewindApplied
    'rewind/interrupted': RewindInterrupted
  }
}

type Ev = { readonly type: string; readonly seq: number; readonly time: number; readonly data: unknown }

/** A turn a person can rewind to. */
export interface RewindPoint {
  /** 1-based among the turns that began with a typed message. */
  number: number
  /** Seq of its `turn/start` (a conversation rewind keeps everything before it). */
  turnSeq: number
  time: number
  /** The message that began it (what a conversation rewind gives back to the editor). */
  text: string
  /** The workspace before the turn, when a checkpoint was taken. */
  snapshot?: string
  /** The workspace after the turn (absent when the turn never closed or had no checkpoint). */
  end?: string
  /** What the turn changed (from its `turn-end` checkpoint; at most 200 listed). */
  changes: SnapshotChange[]
  changed: number
  /** A later rewind or /undo took this turn's changes back (and no /redo brought them again). */
  undone: boolean
}

interface Turn {
  seq: number
  time: number
  text?: string
  start?: CheckpointTaken
  end?: CheckpointTaken
}

function textOf(data: SessionEventMap['user/message']): string {
  return data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n')
}

/** Every turn with its typed message and checkpoints, in log order. */
function turns(events: readonly Ev[]): Turn[] {
  const out: Turn[] = []
  let open: Turn | undefined
  for (const event of events) {
    if (event.type === 'turn/start') {
      open = { seq: event.seq, time: event.time }
      out.push(open)
    } else if (event.type === 'turn/end') open = undefined
    else if (!open) continue
    else if (isEvent(event, 'user/message')) {
      if (open.text === undefined && !event.data.origin) open.text = textOf(event.data)
    } else if (isEvent(event, 'checkpoint/taken')) {
      if (event.data.at === 'turn-start' && !open.start) open.start = event.data
      else if (event.data.at === 'turn-end') open.end = event.data
    }
  }
  return out
}

/**
 * Which points' changes are taken back: a rewind to point N (or an /undo of it) at seq S undoes every
 * point >= N that began before S; a /redo of that rewind gives them back.
 */
function undoneSet(events: readonly Ev[], points: readonly { number: number; turnSeq: number }[]): Set<number> {
  const undone = new Set<number>()
  const marked = new Map<number, number[]>()
  for (const event of events) {
    if (!isEvent(event, 'rewind/applied')) continue
    const data = event.data
    if (data.kind === 'redo') {
      for (const number of marked.get(data.of ?? -1) ?? []) undone.delete(number)
    } else if (data.point !== undefined) {
      const point = data.point
      const hit = points.filter((p) => p.number >= point && p.turnSeq < event.seq).map((p) => p.number)
      for (const number of hit) undone.add(number)
      marked.set(event.seq, hit)
    }
  }
  return undone
}

/** The points of a session, oldest first. */
export function rewindPoints(events: readonly Ev[]): RewindPoint[] {
  const points: RewindPoint[] = []
  for (const turn of turns(events)) {
    if (turn.text === undefined) continue
    points.push({
      number: points.length + 1,
      turnSeq: turn.seq,
      time: turn.time,
      text: turn.text,
      ...(turn.start ? { snapshot: turn.start.snapshot } : {}),
      ...(turn.end ? { end: turn.end.snapshot } : {}),
      changes: turn.end?.changes ?? [],
      changed: turn.end?.changed ?? turn.end?.changes?.length ?? 0,
      undone: false,
    })
  }
  const undone = undoneSet(events, points)
  for (const point of points) point.undone = undone.has(point.number)
  return points
}

/**
 * The snapshot pairs whose differences are the session's own changes from `fromSeq` on: each turn's
 * start to its end (or to the next checkpoint when it never closed), and each rewind's before to after.
 */
export function ownSpans(events: readonly Ev[], fromSeq: number): Array<{ from: string; to: string }> {
  const spans: Array<{ from: string; to: string }> = []
  let pending: string | undefined
  for (const event of events) {
    if (event.seq < fromSeq) continue
    if (isEvent(event, 'checkpoint/taken')) {
      if (pending !== undefined) spans.push({ from: pending, to: event.data.snapshot })
      pending = event.data.at === 'turn-start' ? event.data.snapshot : undefined
    } else if (isEvent(event, 'rewind/applied')) {
      spans.push({ from: event.data.before, to: event.data.after })
      pending = undefined
    }
  }
  return spans
}

/** Paths that no snapshot captured (over the size limit) anywhere from `fromSeq`: never restored. */
export function skippedPaths(events: readonly Ev[], fromSeq: number): Set<string> {
  const out = new Set<string>()
  for (const event of events)
    if (event.seq >= fromSeq && isEvent(event, 'checkpoint/taken'))
      for (const file of event.data.skipped ?? []) out.add(file.path)
  return out
}

/** The last workspace state the session knows it left (a checkpoint or a rewind's result). */
export function lastKnown(events: readonly Ev[]): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]
    if (isEvent(event, 'checkpoint/taken')) return event.data.snapshot
    if (isEvent(event, 'rewind/applied')) return event.data.after
  }
  return undefined
}

/** The newest point whose changes are still in place (what /undo takes back). */
export function undoTarget(points: readonly RewindPoint[]): RewindPoint | undefined {
  return points.findLast((point) => !point.undone && point.changed > 0 && point.snapshot !== undefined)
}

/**
 * The rewind /redo gives back: a stack of rewinds and undos, newest on top; a /redo pops the one it
 * took back, and a turn that changed files empties it (redoing then would lose that work).
 */
export function redoTarget(events: readonly Ev[]): { seq: number; data: RewindApplied } | undefined {
  const stack: Array<{ seq: number; data: RewindApplied }> = []
  for (const event of events) {
    if (isEvent(event, 'rewind/applied')) {
      if (event.data.kind === 'redo') {
        const at = stack.findIndex((entry) => entry.seq === event.data.of)
        if (at >= 0) stack.splice(at, 1)
      } else if (event.data.written.length + event.data.deleted.length > 0)
        stack.push({ seq: event.seq, data: event.data })
    } else if (isEvent(event, 'checkpoint/taken') && event.data.at === 'turn-end' && (event.data.changed ?? 0) > 0)
      stack.length = 0
  }
  return stack.at(-1)
}

/** Sessions of subagents started at or after `fromSeq` (their changes are inside the span). */
export function subagentsSince(events: readonly Ev[], fromSeq: number): string[] {
  const out: string[] = []
  for (const event of events) {
    if (event.seq < fromSeq || event.type !== 'subagent/started') continue
    // Declared by @dsh/orchestration, which this package does not depend on: read structurally.
    const id = field(event.data, 'childSession') ?? field(event.data, 'subagentId')
    if (typeof id === 'string') out.push(id)
  }
  return out
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined
}

/** A rewind that started and never finished (the process died during the restore). */
export function unfinishedRewind(events: readonly Ev[]): { seq: number; data: RewindStarted } | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]
    if (isEvent(event, 'rewind/applied') || isEvent(event, 'rewind/interrupted')) return undefined
    if (isEvent(event, 'rewind/started')) return { seq: event.seq, data: event.data }
  }
  return undefined
}
