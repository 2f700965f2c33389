// What every provider's process handle shares: the `done` promise, idempotent terminate over a
// provider-specific group reaping, the bounded output views, ownership by the spawning plugin and the
// private spill directory. A provider supplies only how a group is signalled and how its leader ends.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from '@dsh/kernel'
import type { OutputRange, OutputSnapshot, SpawnSpec, SubprocessExit, SubprocessHandle } from './index.js'
import { OutputBuffer } from './output.js'

/** How the group's leader ended: an exit code, or the signal that killed it. */
export interface LeaderExit {
  code: number | null
  signal: NodeJS.Signals | null
}

export abstract class BufferedHandle implements SubprocessHandle {
  readonly startedAt = Date.now()
  readonly done: Promise<SubprocessExit>
  protected leaderExit: LeaderExit | undefined
  /** True once `terminate()` (or the spec's signal) ended a still-running leader. */
  protected terminatedFlag = false
  /** Group members still alive after SIGKILL and the wait bound. */
  protected survivors = 0
  private resolveDone!: (exit: SubprocessExit) => void
  private finished = false
  private terminating: Promise<SubprocessExit> | undefined
  private reaping: Promise<void> | undefined

  constructor(
    readonly pid: number,
    readonly argv: readonly string[],
    protected readonly spec: SpawnSpec,
    protected readonly buffer: OutputBuffer,
  ) {
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve
    })
  }

  get exited(): boolean {
    return this.leaderExit !== undefined
  }

  /** SIGTERM the group, wait `spec.graceMs`, SIGKILL, wait; sets `survivors`. Called at most once. */
  protected abstract reapGroup(): Promise<void>

  /** After the reaping that `terminate()` started (the remote provider closes its channel here). */
  protected afterTerminate(): void {}

  protected reap(): Promise<void> {
    this.reaping ??= this.reapGroup()
    return this.reaping
  }

  /** Settles `done`: the leader has exited and nothing of its group is left to reap. */
  protected finish(exit: LeaderExit): void {
    this.buffer.close()
    this.finished = true
    this.resolveDone({
      exitCode: exit.code,
      signal: exit.signal,
      terminated: this.terminatedFlag,
      survivors: this.survivors,
      output: this.buffer.snapshot(),
    })
  }

  terminate(_reason?: string): Promise<SubprocessExit> {
    this.terminating ??= (async () => {
      // A settled group is gone; its pgid may already belong to someone else: never signal it.
      if (this.finished) return this.done
      if (!this.exited) this.terminatedFlag = true
      await this.reap()
      this.afterTerminate()
      return this.done
    })()
    return this.terminating
  }

  output(): OutputSnapshot {
    return this.buffer.snapshot()
  }

  read(start: number, maxBytes: number): OutputRange {
    return this.buffer.read(start, maxBytes)
  }

  onOutput(listener: (chunk: string) => void): () => void {
    return this.buffer.onOutput(listener)
  }
}

/**
 * The live handles of one provider and their spill directory. `adopt` ties a new handle to the
 * plugin that spawned it (its dispose reaps the tree) and to the spec's signal; a finished handle
 * drops both by itself. `dispose` terminates every live handle and removes the spill directory.
 */
export class HandleSet<H extends BufferedHandle> {
  private readonly handles = new Set<H>()
  private spillDir: string | undefined
  private spillSeq = 0

  constructor(private readonly spillRoot: string | undefined) {}

  live(): readonly H[] {
    return [...this.handles]
  }

  /**
   * The bounded output of a new process; it spills to `output-<pid>-<n>.log` in a private directory
   * made on first overflow (`pid` is read then: a remote pid is known only after the prologue).
   */
  outputBuffer(spec: SpawnSpec, pid: () => number): OutputBuffer {
    return new OutputBuffer(spec.output.headBytes, spec.output.tailBytes, () => {
      this.spillDir ??= mkdtempSync(join(this.spillRoot ?? tmpdir(), 'dsh-output-'))
      return join(this.spillDir, `output-${pid()}-${++this.spillSeq}.log`)
    })
  }

  adopt(owner: Context, handle: H, spec: SpawnSpec, label: string): H {
    this.handles.add(handle)
    const onAbort = () => void handle.terminate('aborted')
    if (spec.signal?.aborted) onAbort()
    else spec.signal?.addEventListener('abort', onAbort, { once: true })
    const release = owner.effect(() => () => handle.terminate('owner disposed').then(() => {}), label)
    void handle.done.then(() => {
      spec.signal?.removeEventListener('abort', onAbort)
      this.handles.delete(handle)
      void release()
    })
    return handle
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.handles].map((handle) => handle.terminate('subprocess service disposed')))
    if (this.spillDir) rmSync(this.spillDir, { recursive: true, force: true })
  }
}
