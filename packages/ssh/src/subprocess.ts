// @dsh/ssh/subprocess: `ctx.subprocess` on the remote machine. Each spawn is an exec channel whose
// command is a small POSIX sh prologue: it starts a watcher, reports its pid (sshd makes every session
// command a session and process-group leader, so pid = pgid), checks the cwd and the executable, then
// execs `env -i <spec env> argv` (the spec's environment is the whole environment, as locally). Output
// is bounded and spilled on this machine, like the local provider's. `terminate()` signals the remote
// group with `kill -s TERM -- -pgid`, waits the grace, SIGKILLs, and waits until the group is gone; a
// leader that exits with descendants left behind gets the same reaping (decision 061). The watcher
// does the same when the channel drops without a terminate (dsh SIGKILLed; decision 372). Remote
// commands use `kill -s NAME --` only: it is the form dash, bash and busybox all accept.
import { randomUUID } from 'node:crypto'
import { posix } from 'node:path'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import {
  type Containment,
  checkSpawnSpec,
  type SpawnSpec,
  type Subprocess,
  type SubprocessHandle,
  scrubEnv,
} from '@dsh/world/subprocess'
import { BufferedHandle, HandleSet, type LeaderExit } from '@dsh/world/subprocess/handle'
import type { OutputBuffer } from '@dsh/world/subprocess/output'
import type { ClientChannel } from 'ssh2'
import { type SshConnection, shellQuote } from './index.js'

export interface RemoteSubprocessConfig {
  /** Parent of the private spill directory (on this machine). Default: the OS temp dir. */
  spillRoot?: string
  /** How long to wait for a SIGKILLed remote group to disappear. Default 5000. */
  reapTimeoutMs?: number
}

const MARK = '\u001edsh:'
/** Whether process `$p` runs (not a zombie): /proc where there is one, else ps, else kill -0. */
const LEADER_RUNNING = [
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  'if [ -r "/proc/$p/stat" ]; then read -r s < "/proc/$p/stat" && case "${s##*) }" in Z*|X*) false;; *) true;; esac',
  'elif command -v ps >/dev/null 2>&1; then case "$(ps -o stat= -p "$p" 2>/dev/null)" in Z*|"") false;; *) true;; esac',
  'else kill -0 "$p" 2>/dev/null; fi',
].join('; ')
const POLL_S = 0.05

/**
 * The watcher: a process in a session (and process group) of its own, started by the prologue, reading
 * the channel's stdin, which dsh keeps open and never writes. EOF while the command still runs means the
 * channel is gone without a `terminate()` (dsh was killed, the connection dropped): it TERMs the
 * command's group, waits the grace, KILLs. After a normal exit it finds the leader gone and leaves at
 * once. Outside the group, it is never taken for a leftover of the command (not even as a zombie an
 * init has not reaped yet); its stdout and stderr are /dev/null so it never holds the channel open.
 * Needs `setsid` there (util-linux, busybox); without it the command runs unwatched, as before.
 * See docs/decisions/372-remote-trees-die-with-the-connection.md.
 */
export function watcher(graceMs: number): string {
  const grace = Math.max(1, Math.ceil(graceMs / 1000))
  const body = [
    'p=$1',
    'while read -r _; do :; done',
    // The leader may still be a zombie sshd has not reaped yet: that is an exit, not a live command.
    `{ ${LEADER_RUNNING}; } || exit 0`,
    // `-s NAME --`: dash's kill takes no `--` after `-TERM`.
    'kill -s TERM -- "-$p" 2>/dev/null',
    `sleep ${grace}`,
    'kill -s KILL -- "-$p" 2>/dev/null',
  ].join('\n')
  // fd 3 is the channel's stdin (an asynchronous list's own stdin is /dev/null).
  // A simple command as the asynchronous list, so the forked child execs setsid (no shell left in the group).
  return `if command -v setsid >/dev/null 2>&1; then setsid /bin/sh -c ${shellQuote(body)} sh "$p" <&3 >/dev/null 2>&1 & fi`
}

/**
 * The prologue: start the watcher, point stdin at `stdinFile` (removed once open) or /dev/null, report
 * the pid, check cwd and executable, then exec argv in exactly `env`.
 */
export function remoteCommand(spec: SpawnSpec, env: Record<string, string>, stdinFile?: string): string {
  const [file = ''] = spec.argv
  const assignments = Object.entries(env).map(([name, value]) => shellQuote(`${name}=${value}`))
  const lookup = env.PATH === undefined ? 'PATH=' : `PATH=${shellQuote(env.PATH)}`
  const stdin = stdinFile ? `exec 0<${shellQuote(stdinFile)}; rm -f -- ${shellQuote(stdinFile)}` : 'exec 0</dev/null'
  const script = [
    `p=$$`,
    'exec 3<&0',
    watcher(spec.graceMs),
    stdin,
    `cd -- ${shellQuote(spec.cwd)} 2>/dev/null || { printf '${MARK}%s:nocwd\\n' "$p" >&2; exit 126; }`,
    `${lookup} command -v -- ${shellQuote(file)} >/dev/null 2>&1 || { printf '${MARK}%s:noexec\\n' "$p" >&2; exit 127; }`,
    `printf '${MARK}%s:ok\\n' "$p" >&2`,
    `exec env -i ${assignments.join(' ')} ${spec.argv.map(shellQuote).join(' ')} 3<&-`,
  ].join('\n')
  // Through /bin/sh whatever the login shell is; `exec` keeps the session leader's pid.
  return `exec /bin/sh -c ${shellQuote(script)}`
}

/** A remote script that TERMs the group, waits `graceMs`, KILLs, waits, and prints `gone` or `alive`. */
export function reapScript(pgid: number, graceMs: number, reapMs: number): string {
  const rounds = (ms: number) => Math.max(1, Math.ceil(ms / 1000 / POLL_S))
  const wait = (n: number) =>
    `i=0; while kill -s 0 -- -${pgid} 2>/dev/null && [ $i -lt ${n} ]; do sleep ${POLL_S}; i=$((i+1)); done`
  return [
    `kill -s TERM -- -${pgid} 2>/dev/null`,
    wait(rounds(graceMs)),
    `kill -s KILL -- -${pgid} 2>/dev/null`,
    wait(rounds(reapMs)),
    `if kill -s 0 -- -${pgid} 2>/dev/null; then echo alive; else echo gone; fi`,
  ].join('\n')
}

class RemoteHandle extends BufferedHandle {
  constructor(
    pid: number,
    argv: readonly string[],
    private readonly channel: ClientChannel,
    /** Settles when the channel closed, with the leader's exit status (`exit` may come before this handle). */
    private readonly closed: Promise<LeaderExit>,
    private readonly ssh: SshConnection,
    spec: SpawnSpec,
    buffer: OutputBuffer,
    private readonly reapTimeoutMs: number,
  ) {
    super(pid, argv, spec, buffer)
    void this.settle()
  }

  private async settle(): Promise<void> {
    this.leaderExit = await this.closed
    // Leftovers of the leader (a `cmd &`) are reaped like the local provider's.
    const left = await this.ssh.run(`kill -s 0 -- -${this.pid} 2>/dev/null && echo alive`).catch(() => undefined)
    if (left?.stdout.includes('alive')) await this.reap()
    this.finish(this.leaderExit)
  }

  protected reapGroup(): Promise<void> {
    return this.ssh
      .run(reapScript(this.pid, this.spec.graceMs, this.reapTimeoutMs))
      .then((result) => {
        if (result.stdout.includes('alive')) this.survivors = 1
      })
      .catch(() => {
        // The connection is gone: nothing can be signalled from here any more.
        this.survivors = 1
      })
  }

  protected override afterTerminate(): void {
    // The leader's channel closes once its process is gone.
    this.channel.close()
  }
}

export class RemoteSubprocess extends Service implements Subprocess {
  static readonly provide = 'subprocess'
  static readonly inject = ['ssh']
  private readonly handles: HandleSet<RemoteHandle>
  private readonly config: RemoteSubprocessConfig
  private readonly home: Context

  constructor(ctx: Context, config: RemoteSubprocessConfig = {}) {
    super(ctx, 'subprocess')
    this.home = ctx
    this.config = config ?? {}
    this.handles = new HandleSet(this.config.spillRoot)
    ctx.effect(() => () => this.handles.dispose(), 'subprocess.ssh')
  }

  live(): readonly SubprocessHandle[] {
    return this.handles.live()
  }

  async containment(): Promise<Containment> {
    return {
      mechanism: 'none',
      prefix: [],
      detail: `remote process groups on ${this.home.ssh.target.host}, reaped by terminate() and dispose, and by a watcher there when the connection drops (dsh SIGKILLed)`,
    }
  }

  async spawn(spec: SpawnSpec): Promise<SubprocessHandle> {
    checkSpawnSpec(spec)
    const owner = this.ctx
    const ssh = this.home.ssh
    const stdinFile = typeof spec.stdio.stdin === 'object' ? await this.stageStdin(spec.stdio.stdin.text) : undefined
    const channel = await ssh.exec(remoteCommand(spec, scrubEnv(spec.env, spec.trustedEnv), stdinFile))
    let exit: LeaderExit = { code: null, signal: null }
    channel.once('exit', (code: number | null, signal?: string) => {
      exit = { code: signal ? null : code, signal: signal ? (`SIG${signal}` as NodeJS.Signals) : null }
    })
    const closed = new Promise<typeof exit>((resolve) => channel.once('close', () => resolve(exit)))
    let pid = 0
    const buffer = this.handles.outputBuffer(spec, () => pid)
    // The prologue's status line comes first on stderr; everything after it is the command's.
    const status = new Promise<{ pid: number; state: string }>((resolve) => {
      let pending = ''
      let seen = false
      channel.stderr.on('data', (chunk: Buffer) => {
        if (seen) {
          if (spec.stdio.stderr === 'pipe') buffer.push(chunk)
          return
        }
        pending += chunk.toString('latin1')
        const newline = pending.indexOf('\n')
        if (newline === -1) return
        seen = true
        const line = pending.slice(0, newline)
        const rest = Buffer.from(pending.slice(newline + 1), 'latin1')
        const match = new RegExp(`${MARK}(\\d+):(\\w+)`).exec(line)
        if (rest.length > 0 && spec.stdio.stderr === 'pipe') buffer.push(rest)
        resolve(match ? { pid: Number(match[1]), state: match[2] as string } : { pid: 0, state: `bad:${line}` })
      })
      void closed.then(() => resolve({ pid: 0, state: 'closed' }))
    })
    channel.on('data', (chunk: Buffer) => {
      if (spec.stdio.stdout === 'pipe') buffer.push(chunk)
    })
    const started = await status
    if (started.state !== 'ok') {
      channel.close()
      const why =
        started.state === 'nocwd'
          ? `no such directory on ${ssh.target.host}`
          : started.state === 'noexec'
            ? `no such executable on ${ssh.target.host}`
            : `the remote shell did not start it (${started.state})`
      throw new HarnessError(
        'SUBPROCESS_SPAWN_FAILED',
        `cannot start ${JSON.stringify(spec.argv[0])} in ${spec.cwd}: ${why}`,
        {
          argv0: spec.argv[0],
          cwd: spec.cwd,
          errno: started.state === 'nocwd' ? 'ENOENT' : started.state === 'noexec' ? 'ENOENT' : null,
        },
      )
    }
    pid = started.pid
    // The channel's stdin stays open and unwritten: the remote watcher takes its EOF for dsh gone.
    const handle = new RemoteHandle(
      pid,
      [...spec.argv],
      channel,
      closed,
      ssh,
      spec,
      buffer,
      this.config.reapTimeoutMs ?? 5000,
    )
    return this.handles.adopt(owner, handle, spec, `subprocess(ssh:${handle.pid})`)
  }

  /** Writes a spawn's stdin text to a private remote temp file (the prologue opens and removes it). */
  private async stageStdin(text: string): Promise<string> {
    const ssh = this.home.ssh
    const path = posix.join(ssh.info.tmp, `dsh-stdin-${randomUUID()}`)
    const sftp = await ssh.sftp()
    await new Promise<void>((resolve, reject) =>
      sftp.writeFile(path, text, { mode: 0o600 }, (error) =>
        error
          ? reject(
              new HarnessError(
                'SUBPROCESS_SPAWN_FAILED',
                `cannot stage stdin at ${path} on ${ssh.target.host}: ${error.message}`,
                {
                  path,
                },
              ),
            )
          : resolve(),
      ),
    )
    return path
  }
}

export default RemoteSubprocess
