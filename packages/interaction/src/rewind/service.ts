// `ctx.rewind`: the workspace and the conversation back to an earlier user message (issue 32).
// Checkpoints are snapshots (`ctx.snapshots`) taken before and after each turn and logged as
// `checkpoint/taken`, so they survive resume, fork and a crash. A files rewind writes back only what
// this session's own turns (and earlier rewinds) changed; a file someone else changed since the
// session last saw it is a conflict: listed, and left alone unless the person says overwrite. Every
// restore is logged before (`rewind/started`, flushed) and after (`rewind/applied`); a restore the
// process never finished is found on the next attach and logged as `rewind/interrupted`.
import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { foldInbox, type InboxSplice } from '@dsh/agent'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import { isEvent, type Session } from '@dsh/session'
import type { Snapshot, SnapshotChange, Snapshots } from '@dsh/world/snapshots'
import {
  type CheckpointTaken,
  lastKnown,
  ownSpans,
  type RewindApplied,
  type RewindKind,
  type RewindPoint,
  redoTarget,
  rewindPoints,
  skippedPaths,
  subagentsSince,
  undoTarget,
  unfinishedRewind,
} from './log.js'

declare module 'cordis' {
  interface Context {
    rewind: RewindService
  }
}

/** What a files rewind, /undo or /redo did (or why it did nothing). */
export interface FilesOutcome {
  ok: boolean
  kind: RewindKind
  /** `REWIND_CONFLICT` (files changed by someone else; nothing was written) or `REWIND_NOTHING`. */
  code?: 'REWIND_CONFLICT' | 'REWIND_NOTHING'
  text: string
  point?: number
  written: string[]
  deleted: string[]
  /** Changed by someone else since the session last saw them (refused, or overwritten on request). */
  conflicts: string[]
  overwritten: string[]
  /** Over the size limit when a checkpoint was taken: never written back. */
  notCaptured: string[]
  /** Subagent sessions whose changes were part of what was taken back. */
  subagents: string[]
  /** Seq of the `rewind/applied` event (absent when nothing was applied). */
  seq?: number
}

/** A conversation rewind: the new session (not yet attached) and the message to edit again. */
export interface ConversationFork {
  child: Session
  point: RewindPoint
  text: string
}

export interface RewindConfig {
  /** Default for the `checkpoints` setting. Default true. */
  enabled?: boolean
}

const MAX_LISTED = 200

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`
}

export class RewindService extends Service {
  static readonly inject = ['sessions']
  /** One chain per session: checkpoints and restores never overlap. */
  private readonly _chains = new Map<string, Promise<unknown>>()
  /** Turn-start checkpoints being taken, by session. */
  private readonly _starting = new Map<string, Promise<() => void>>()

  constructor(
    ctx: Context,
    private readonly _config: RewindConfig = {},
  ) {
    super(ctx, 'rewind')
  }

  /** Whether checkpoints are taken (the `checkpoints` setting and a snapshots provider). */
  enabled(): boolean {
    if (!this.ctx.get('snapshots')) return false
    const settings = this.ctx.get('settings')
    const value = settings?.has('checkpoints') ? settings.get('checkpoints') : (this._config.enabled ?? true)
    return !(value === false || value === 'off')
  }

  points(session: Session): RewindPoint[] {
    return rewindPoints(session.events)
  }

  /** The point numbered `number`, or REWIND_POINT_UNKNOWN naming the range. */
  point(session: Session, number: number): RewindPoint {
    const points = this.points(session)
    const point = points.find((candidate) => candidate.number === number)
    if (!point)
      throw new HarnessError(
        'REWIND_POINT_UNKNOWN',
        points.length === 0
          ? `session ${session.id} has no message to rewind to yet`
          : `there is no message ${number} to rewind to; this session has messages 1 to ${points.length} (/rewind lists them)`,
        { sessionId: session.id, point: number, points: points.length },
      )
    return point
  }

  private _serial<T>(session: Session, work: () => Promise<T>): Promise<T> {
    const previous = this._chains.get(session.id) ?? Promise.resolve()
    const next = previous.then(work, work)
    const settled = next.catch(() => undefined)
    this._chains.set(session.id, settled)
    void settled.then(() => {
      if (this._chains.get(session.id) === settled) this._chains.delete(session.id)
    })
    return next
  }

  private _snapshots(): Snapshots {
    const snapshots = this.ctx.get('snapshots')
    if (!snapshots)
      throw new HarnessError(
        'REWIND_UNAVAILABLE',
        'no workspace checkpoints in this profile (the snapshots row is off, or the world is remote); a conversation rewind still works',
        {},
      )
    return snapshots
  }

  /**
   * Starts the checkpoint before a turn. It is taken while the model is asked (a workspace's first
   * snapshot hashes every file) and logged at the turn's first tool body, which waits for it, or when
   * the turn closes: no tool touches a file before the workspace as it was is kept.
   */
  beginTurn(session: Session): void {
    if (!this.enabled()) return
    this._starting.set(
      session.id,
      this._serial(session, () => this._take(session, 'turn-start')),
    )
  }

  /** Logs the pending turn-start checkpoint, once it is taken; whether there was one. */
  async logStart(session: Session): Promise<boolean> {
    const taking = this._starting.get(session.id)
    if (!taking) return false
    this._starting.delete(session.id)
    ;(await taking)()
    return true
  }

  /** Takes and logs the checkpoint after a turn (logging the start first if still pending). Never throws. */
  async endTurn(session: Session): Promise<void> {
    await this.logStart(session)
    if (!this.enabled()) return
    const append = await this._serial(session, () => this._take(session, 'turn-end'))
    append()
  }

  /** Takes a checkpoint; resolves with what logs it (`checkpoint/taken`, or `checkpoint/unavailable`). */
  private async _take(session: Session, at: CheckpointTaken['at']): Promise<() => void> {
    const append = (data: CheckpointTaken) => () => {
      session.append('checkpoint/taken', data, { ignorable: true })
    }
    try {
      const snapshots = this._snapshots()
      const reuse = at === 'turn-end' ? this._quietTurn(session) : undefined
      // No tool ran: the session changed nothing. A change someone else made meanwhile shows up as
      // theirs at the next rewind, as it should.
      if (reuse) return append({ ...reuse, at, ms: 0, changes: [], changed: 0 })
      const snapshot = await snapshots.take({ cwd: session.header.cwd, sessionId: session.id })
      const data: CheckpointTaken = { at, snapshot: snapshot.id, files: snapshot.files, ms: snapshot.ms }
      if (snapshot.skipped.length > 0) data.skipped = snapshot.skipped.slice(0, MAX_LISTED)
      if (at === 'turn-end') {
        const start = this._turnStart(session)
        const changes =
          start && start !== snapshot.id ? await snapshots.changes(session.header.cwd, start, snapshot.id) : []
        data.changes = changes.slice(0, MAX_LISTED)
        data.changed = changes.length
      }
      return append(data)
    } catch (error) {
      const code = error instanceof HarnessError ? error.code : 'SNAPSHOT_FAILED'
      const reason = error instanceof Error ? error.message : String(error)
      this.ctx.logger('rewind').debug('no checkpoint for %s: %s', session.id, reason)
      return () => {
        const last = session.events.findLast(
          (event) => event.type === 'checkpoint/taken' || event.type === 'checkpoint/unavailable',
        )
        const same = isEvent(last, 'checkpoint/unavailable') && last.data.reason === reason
        if (!same) session.append('checkpoint/unavailable', { code, reason }, { ignorable: true })
      }
    }
  }

  /** The open turn's start checkpoint when no tool was called in the turn (nothing to snapshot again). */
  private _quietTurn(session: Session): CheckpointTaken | undefined {
    let start: CheckpointTaken | undefined
    for (let i = session.events.length - 1; i >= 0; i--) {
      const event = session.events[i]
      if (event?.type === 'tool/call') return undefined
      if (isEvent(event, 'checkpoint/taken') && event.data.at === 'turn-start') {
        const { changes: _changes, changed: _changed, ...data } = event.data
        start = data
      }
      if (event?.type === 'turn/start') return start
    }
    return undefined
  }

  /** A snapshot at attach, not logged: the first turn's checkpoint then only looks at what changed. */
  warm(session: Session): void {
    if (!this.enabled()) return
    const snapshots = this.ctx.get('snapshots')
    if (!snapshots) return
    void this._serial(session, () =>
      snapshots.take({ cwd: session.header.cwd, sessionId: session.id }).catch(() => undefined),
    )
  }

  /** The turn-start snapshot of the open turn. */
  private _turnStart(session: Session): string | undefined {
    for (let i = session.events.length - 1; i >= 0; i--) {
      const event = session.events[i]
      if (event?.type === 'turn/start') return undefined
      if (isEvent(event, 'checkpoint/taken') && event.data.at === 'turn-start') return event.data.snapshot
    }
    return undefined
  }

  /** Brings the files back to how they were before point `number`. */
  files(session: Session, number: number, options: { overwrite?: boolean; kind?: 'rewind' | 'undo' } = {}) {
    const point = this.point(session, number)
    if (!point.snapshot)
      throw new HarnessError(
        'REWIND_NO_CHECKPOINT',
        `message ${number} has no workspace checkpoint (checkpoints were off or unavailable then); only the conversation can go back to it`,
        { sessionId: session.id, point: number },
      )
    const to = point.snapshot
    return this._serial(session, () =>
      this._restore(session, {
        kind: options.kind ?? 'rewind',
        to,
        fromSeq: point.turnSeq,
        point: point.number,
        overwrite: options.overwrite === true,
      }),
    )
  }

  /** Takes back the file changes of the newest turn that still has them in place. */
  undo(session: Session, options: { overwrite?: boolean } = {}): Promise<FilesOutcome> {
    const target = undoTarget(this.points(session))
    if (!target)
      return Promise.resolve(this._nothing('undo', 'no turn of this session changed files that are still in place'))
    return this.files(session, target.number, { ...options, kind: 'undo' })
  }

  /** Gives back what the newest rewind or /undo took back. */
  redo(session: Session, options: { overwrite?: boolean } = {}): Promise<FilesOutcome> {
    const target = redoTarget(session.events)
    if (!target)
      return Promise.resolve(
        this._nothing('redo', 'nothing to redo (no rewind or /undo since the last turn that changed files)'),
      )
    return this._serial(session, () =>
      this._restore(session, {
        kind: 'redo',
        to: target.data.before,
        paths: [...target.data.written, ...target.data.deleted],
        of: target.seq,
        overwrite: options.overwrite === true,
      }),
    )
  }

  private _nothing(kind: RewindKind, text: string): FilesOutcome {
    return {
      ok: false,
      kind,
      code: 'REWIND_NOTHING',
      text,
      written: [],
      deleted: [],
      conflicts: [],
      overwritten: [],
      notCaptured: [],
      subagents: [],
    }
  }

  private async _restore(
    session: Session,
    plan: {
      kind: RewindKind
      to: string
      overwrite: boolean
      fromSeq?: number
      point?: number
      paths?: string[]
      of?: number
    },
  ): Promise<FilesOutcome> {
    const snapshots = this._snapshots()
    const cwd = session.header.cwd
    const events = session.events
    // The session's own changes since the point: each turn's start to end, each rewind's before to after.
    let own: Set<string>
    if (plan.paths) own = new Set(plan.paths)
    else {
      own = new Set()
      for (const span of ownSpans(events, plan.fromSeq ?? 0))
        for (const change of await snapshots.changes(cwd, span.from, span.to)) own.add(change.path)
    }
    const notCaptured = plan.fromSeq === undefined ? new Set<string>() : skippedPaths(events, plan.fromSeq)
    const now: Snapshot = await snapshots.take({ cwd, sessionId: session.id })
    const differs = new Set((await snapshots.changes(cwd, plan.to, now.id)).map((change) => change.path))
    const known = lastKnown(events)
    const elsewhere = new Set<string>(
      known && known !== now.id ? (await snapshots.changes(cwd, known, now.id)).map((change) => change.path) : [],
    )
    const skippedNow = new Set(now.skipped.map((file) => file.path))
    const paths = [...own].filter((path) => differs.has(path) && !notCaptured.has(path) && !skippedNow.has(path))
    const conflicts = paths.filter((path) => elsewhere.has(path))
    const outcome: FilesOutcome = {
      ok: true,
      kind: plan.kind,
      text: '',
      ...(plan.point !== undefined ? { point: plan.point } : {}),
      written: [],
      deleted: [],
      conflicts,
      overwritten: [],
      notCaptured: [...own].filter((path) => notCaptured.has(path) || skippedNow.has(path)),
      subagents: plan.fromSeq === undefined ? [] : subagentsSince(events, plan.fromSeq),
    }
    if (conflicts.length > 0 && !plan.overwrite) {
      outcome.ok = false
      outcome.code = 'REWIND_CONFLICT'
      outcome.text = `nothing was changed: ${plural(conflicts.length, 'file')} changed by someone else since this session last saw ${conflicts.length === 1 ? 'it' : 'them'} (${conflicts.slice(0, 5).join(', ')}${conflicts.length > 5 ? ', ...' : ''}); rewind again with overwrite to replace ${conflicts.length === 1 ? 'it' : 'them'} too`
      return outcome
    }
    if (paths.length === 0) {
      outcome.code = 'REWIND_NOTHING'
      outcome.text = 'the files are already as they were then; nothing to write back'
      return outcome
    }
    const started = {
      kind: plan.kind,
      to: plan.to,
      before: now.id,
      paths,
      ...(plan.point !== undefined ? { point: plan.point } : {}),
      ...(plan.of !== undefined ? { of: plan.of } : {}),
    }
    session.append('rewind/started', started, { ignorable: true })
    await this.ctx.sessions.flush(session)
    const result = await snapshots.restore({ cwd, to: plan.to, paths })
    const after = await snapshots.take({ cwd, sessionId: session.id })
    const applied: RewindApplied = {
      ...started,
      after: after.id,
      written: result.written,
      deleted: result.deleted,
      overwritten: conflicts,
      subagents: outcome.subagents,
    }
    const event = session.append('rewind/applied', applied, { ignorable: true })
    await this.ctx.sessions.flush(session)
    outcome.written = result.written
    outcome.deleted = result.deleted
    outcome.overwritten = conflicts
    outcome.seq = event.seq
    const what = plan.kind === 'redo' ? 'gave back' : 'took back'
    const parts = [`${what} ${plural(result.written.length + result.deleted.length, 'file change')}`]
    if (result.written.length > 0)
      parts.push(`wrote ${result.written.slice(0, 5).join(', ')}${result.written.length > 5 ? ', ...' : ''}`)
    if (result.deleted.length > 0)
      parts.push(`deleted ${result.deleted.slice(0, 5).join(', ')}${result.deleted.length > 5 ? ', ...' : ''}`)
    if (conflicts.length > 0) parts.push(`overwrote ${plural(conflicts.length, 'file')} changed by someone else`)
    if (outcome.notCaptured.length > 0)
      parts.push(`left ${plural(outcome.notCaptured.length, 'file')} over the size limit as they are`)
    if (outcome.subagents.length > 0)
      parts.push(`including what ${plural(outcome.subagents.length, 'subagent')} changed`)
    parts.push(plan.kind === 'redo' ? '/undo takes it back again' : '/redo gives it back')
    outcome.text = parts.join('; ')
    return outcome
  }

  /**
   * A conversation rewind: a new session holding everything before point `number`'s turn (the
   * original is kept), its queued input dropped; the message comes back for the person to edit.
   */
  fork(session: Session, number: number, options: { cwd?: string } = {}): ConversationFork {
    const point = this.point(session, number)
    const child = this.ctx.sessions.fork(session, point.turnSeq - 1, undefined, options)
    dropQueued(child)
    return { child, point, text: point.text }
  }

  /** Copies a files rewind into the conversation fork that continues from it (`both`), so /redo works there. */
  record(child: Session, from: Session, outcome: FilesOutcome): void {
    if (outcome.seq === undefined) return
    const event = from.events[outcome.seq]
    if (!isEvent(event, 'rewind/applied')) return
    child.append('rewind/applied', { ...event.data, from: from.id }, { ignorable: true })
  }

  /** A unified diff from the checkpoint before point `number` to the workspace now. */
  async diff(session: Session, number: number): Promise<{ patch: string; changes: SnapshotChange[] }> {
    const point = this.point(session, number)
    if (!point.snapshot)
      throw new HarnessError('REWIND_NO_CHECKPOINT', `message ${number} has no workspace checkpoint`, {
        sessionId: session.id,
        point: number,
      })
    const snapshots = this._snapshots()
    const cwd = session.header.cwd
    const now = await snapshots.take({ cwd, sessionId: session.id })
    return {
      patch: await snapshots.patch(cwd, point.snapshot, now.id),
      changes: await snapshots.changes(cwd, point.snapshot, now.id),
    }
  }

  /** Logs which files a restore the process never finished brought back. Never throws. */
  recover(session: Session): Promise<void> {
    const unfinished = unfinishedRewind(session.events)
    if (!unfinished || !this.ctx.get('snapshots')) return Promise.resolve()
    return this._serial(session, async () => {
      try {
        const snapshots = this._snapshots()
        const cwd = session.header.cwd
        const now = await snapshots.take({ cwd, sessionId: session.id })
        const differs = new Set((await snapshots.changes(cwd, unfinished.data.to, now.id)).map((change) => change.path))
        const restored = unfinished.data.paths.filter((path) => !differs.has(path))
        const notRestored = unfinished.data.paths.filter((path) => differs.has(path))
        await removeRestoreTemps(cwd, unfinished.data.paths)
        session.append('rewind/interrupted', { startedSeq: unfinished.seq, restored, notRestored }, { ignorable: true })
        await this.ctx.sessions.flush(session)
      } catch (error) {
        this.ctx.logger('rewind').warn('could not check the unfinished rewind of %s: %s', session.id, String(error))
      }
    })
  }

  /** Resolves once every checkpoint and restore queued for `session` has settled. */
  async settled(session: Session): Promise<void> {
    await this._chains.get(session.id)
  }
}

/** The temporary files a killed restore left beside the files it was writing (`.NAME.dsh-restore-*`). */
async function removeRestoreTemps(cwd: string, paths: readonly string[]): Promise<void> {
  const folders = new Map<string, Set<string>>()
  for (const path of paths) {
    const slash = path.lastIndexOf('/')
    const folder = join(cwd, path.slice(0, Math.max(slash, 0)))
    const names = folders.get(folder) ?? new Set<string>()
    names.add(`.${path.slice(slash + 1)}.dsh-restore-`)
    folders.set(folder, names)
  }
  for (const [folder, prefixes] of folders) {
    const entries = await readdir(folder).catch(() => [] as string[])
    for (const entry of entries)
      if ([...prefixes].some((prefix) => entry.startsWith(prefix))) await rm(join(folder, entry), { force: true })
  }
}

function dropQueued(session: Session): void {
  const queues = foldInbox(session.events)
  for (const target of ['next-step', 'next-turn'] as const) {
    const count = queues[target].length
    if (count === 0) continue
    const splice: InboxSplice = { target, start: 0, deleteCount: count, items: [], reason: 'edited' }
    session.append('agent/inbox/spliced', splice)
  }
}
