// @dsh/world/subprocess/local: processes on this machine. Each spawn is a detached process group; the
// handle owns the whole group and `terminate()` (or the owner's dispose) reaps it: SIGTERM, grace,
// SIGKILL, then a wait until no process of the group is left (zombies excepted).
import { type ChildProcess, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { constants } from 'node:os'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import { alreadyContained, type ContainMode, findExecutable, probeContainment } from './containment.js'
import { BufferedHandle, HandleSet, type LeaderExit } from './handle.js'
import {
  type Containment,
  checkSpawnSpec,
  type SpawnSpec,
  type Subprocess,
  type SubprocessHandle,
  scrubEnv,
} from './index.js'
import type { OutputBuffer } from './output.js'

export interface LocalSubprocessConfig {
  /** Parent of the private (0700) spill directory. Default: the OS temp dir. */
  spillRoot?: string
  /** How long to wait for a SIGKILLed group to disappear before reporting survivors. Default 5000. */
  reapTimeoutMs?: number
  /** How process trees are tied to this process's life (see containment.ts). Default `auto`. */
  contain?: ContainMode
  /** The bubblewrap executable for the PID namespace. Default `bwrap`. */
  bwrap?: string
}

const POLL_MS = 20

/**
 * Processes of group `pgid` that are still running. On Linux this reads /proc and ignores zombies
 * (an exited process nobody has reaped yet holds no resources and cannot be killed); elsewhere it
 * falls back to `kill(-pgid, 0)`.
 */
export function groupMembers(pgid: number): number {
  if (process.platform === 'linux') {
    let count = 0
    let entries: string[]
    try {
      entries = readdirSync('/proc')
    } catch {
      return probeGroup(pgid)
    }
    for (const entry of entries) {
      if (!/^\d+$/.test(entry)) continue
      let stat: string
      try {
        stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      } catch {
        continue
      }
      // Fields after the parenthesised command: state ppid pgrp ...
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') count++
    }
    return count
  }
  return probeGroup(pgid)
}

function probeGroup(pgid: number): number {
  try {
    process.kill(-pgid, 0)
    return 1
  } catch {
    return 0
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal)
  } catch {}
}

/**
 * SIGTERM to every member of the group but bubblewrap's own processes: a PID namespace dies with its
 * bwrap, so terminating bwrap first would SIGKILL the tree at once and skip the grace period.
 */
function termGroupSparingBwrap(pgid: number): void {
  if (process.platform !== 'linux') {
    signalGroup(pgid, 'SIGTERM')
    return
  }
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[2]) === pgid && comm !== 'bwrap') process.kill(Number(entry), 'SIGTERM')
    } catch {}
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function waitGone(pgid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms
  for (;;) {
    if (groupMembers(pgid) === 0) return true
    if (Date.now() >= until) return false
    await sleep(POLL_MS)
  }
}

class LocalHandle extends BufferedHandle {
  private leaderExited: Promise<void>

  constructor(
    private readonly child: ChildProcess,
    argv: readonly string[],
    spec: SpawnSpec,
    buffer: OutputBuffer,
    private readonly reapTimeoutMs: number,
    /** The leader is bwrap (a sandbox or the containment namespace). */
    private readonly wrapped: boolean,
  ) {
    super(child.pid as number, argv, spec, buffer)
    let streamsOpen = (child.stdout ? 1 : 0) + (child.stderr ? 1 : 0)
    let streamsClosed: () => void = () => {}
    const closed = new Promise<void>((resolve) => {
      streamsClosed = resolve
      if (streamsOpen === 0) resolve()
    })
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue
      stream.on('data', (chunk: Buffer) => buffer.push(chunk))
      stream.on('close', () => {
        if (--streamsOpen === 0) streamsClosed()
      })
    }
    this.leaderExited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.leaderExit = { code, signal }
        resolve()
      })
    })
    void this.settle(closed)
  }

  /** After the leader exits: drain output briefly, reap whatever the group left behind, resolve. */
  private async settle(closed: Promise<void>): Promise<void> {
    await this.leaderExited
    // Descendants holding the pipes keep `closed` pending; they are reaped below.
    await Promise.race([closed, sleep(100)])
    if (groupMembers(this.pid) > 0) await this.reap()
    await Promise.race([closed, sleep(100)])
    this.child.stdout?.destroy()
    this.child.stderr?.destroy()
    let exit = this.leaderExit as LeaderExit
    // bwrap reports a command killed by signal N as exit 128+N; a terminated command died of its signal.
    if (this.wrapped && this.terminatedFlag && exit.code !== null && exit.code > 128) {
      const name = Object.entries(constants.signals).find(([, n]) => n === (exit.code as number) - 128)?.[0]
      if (name) exit = { code: null, signal: name as NodeJS.Signals }
    }
    this.finish(exit)
  }

  protected async reapGroup(): Promise<void> {
    if (this.wrapped) termGroupSparingBwrap(this.pid)
    else signalGroup(this.pid, 'SIGTERM')
    if (await waitGone(this.pid, this.spec.graceMs)) return
    signalGroup(this.pid, 'SIGKILL')
    if (!(await waitGone(this.pid, this.reapTimeoutMs))) this.survivors = groupMembers(this.pid)
  }
}

export class LocalSubprocess extends Service implements Subprocess {
  static readonly provide = 'subprocess'
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly handles: HandleSet<LocalHandle>
  private readonly config: LocalSubprocessConfig
  private probed: Promise<Containment> | undefined

  constructor(ctx: Context, config: LocalSubprocessConfig = {}) {
    super(ctx, 'subprocess')
    this.config = config ?? {}
    this.handles = new HandleSet(this.config.spillRoot)
    ctx.effect(() => () => this.handles.dispose(), 'subprocess.local')
  }

  live(): readonly SubprocessHandle[] {
    return this.handles.live()
  }

  /** The mechanism tying process trees to this process (probed once). */
  containment(): Promise<Containment> {
    this.probed ??= probeContainment(this.config.contain ?? 'auto', this.config.bwrap)
    return this.probed
  }

  async spawn(spec: SpawnSpec): Promise<SubprocessHandle> {
    checkSpawnSpec(spec)
    const owner = this.ctx
    const contained = await this.containment()
    if (
      contained.mechanism === 'none' &&
      (this.config.contain === 'pid-namespace' || this.config.contain === 'pdeathsig')
    ) {
      throw new HarnessError(
        'SUBPROCESS_SPAWN_FAILED',
        `cannot contain the process (contain: ${this.config.contain}): ${contained.detail}`,
        {
          argv0: spec.argv[0],
          cwd: spec.cwd,
          errno: null,
        },
      )
    }
    const wrap = contained.prefix.length > 0 && !alreadyContained(spec.argv)
    if (wrap && findExecutable(spec.argv[0] as string, spec.cwd, spec.env.PATH) === undefined) {
      throw spawnFailed(spec, Object.assign(new Error(`spawn ${spec.argv[0]} ENOENT`), { code: 'ENOENT' }))
    }
    const argv = wrap ? [...contained.prefix, ...spec.argv] : spec.argv
    const [file, ...args] = argv as [string, ...string[]]
    const stdin = spec.stdio.stdin === 'ignore' ? 'ignore' : 'pipe'
    let child: ChildProcess
    try {
      child = spawn(file, args, {
        cwd: spec.cwd,
        env: scrubEnv(spec.env, spec.trustedEnv),
        stdio: [stdin, spec.stdio.stdout, spec.stdio.stderr],
        detached: true,
      })
    } catch (error) {
      throw spawnFailed(spec, error)
    }
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', (error) => reject(spawnFailed(spec, error)))
    })
    if (typeof spec.stdio.stdin === 'object') {
      child.stdin?.on('error', () => {})
      child.stdin?.end(spec.stdio.stdin.text)
    }
    const buffer = this.handles.outputBuffer(spec, () => child.pid as number)
    const handle = new LocalHandle(
      child,
      [...spec.argv],
      spec,
      buffer,
      this.config.reapTimeoutMs ?? 5000,
      alreadyContained(argv),
    )
    return this.handles.adopt(owner, handle, spec, `subprocess(${handle.pid})`)
  }
}

function spawnFailed(spec: SpawnSpec, error: unknown): HarnessError {
  const code = (error as { code?: string }).code
  return new HarnessError(
    'SUBPROCESS_SPAWN_FAILED',
    `cannot start ${JSON.stringify(spec.argv[0])} in ${spec.cwd}: ${(error as Error).message}`,
    { argv0: spec.argv[0], cwd: spec.cwd, errno: code ?? null },
    { cause: error },
  )
}

export default LocalSubprocess
