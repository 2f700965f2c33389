// @dsh/world/shell/bash-local: `bash -c` through `ctx.subprocess`, unconfined. All defaults are decided in
// `resolve`; `run` adds only the foreground deadline. Also the mechanism bash-sandbox builds on.
import { isAbsolute } from 'node:path'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type { Subprocess } from '../subprocess/index.js'
import {
  looksLikeSandboxDenial,
  type Shell,
  type ShellProcess,
  type ShellRequest,
  type ShellResult,
  type ShellSpec,
} from './index.js'

export interface BashConfig {
  /** Default working directory. Default: the process cwd. */
  cwd?: string
  /** Default foreground timeout. Default 120000 (2 min). */
  timeoutMs?: number
  /** Largest timeout a request may ask for. Default 600000 (10 min). */
  maxTimeoutMs?: number
  /** SIGTERM -> SIGKILL grace. Default 2000. */
  graceMs?: number
  /** Output kept in memory per command (half head, half tail). Default 32768. */
  outputBytes?: number
  /** The bash executable. Default `bash`. */
  bash?: string
}

/** Variables that keep tools from waiting on a terminal that is not there. */
const QUIET_ENV = { PAGER: 'cat', GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0', TERM: 'dumb', NO_COLOR: '1' }

export class LocalBash extends Service implements Shell {
  static readonly provide = 'shell'
  static readonly inject = ['subprocess']
  readonly confines: boolean = false
  protected readonly config: BashConfig
  protected readonly home: Context

  constructor(ctx: Context, config: BashConfig = {}) {
    super(ctx, 'shell')
    this.home = ctx
    this.config = config ?? {}
  }

  resolve(request: ShellRequest): ShellSpec {
    if (typeof request?.command !== 'string' || request.command.trim() === '') {
      throw new HarnessError('SHELL_REQUEST_INVALID', 'command must be a non-empty string', {})
    }
    const workdir = request.workdir ?? this.config.cwd ?? process.cwd()
    if (!isAbsolute(workdir)) {
      throw new HarnessError('SHELL_REQUEST_INVALID', `workdir must be absolute: ${workdir}`, { workdir })
    }
    const max = this.config.maxTimeoutMs ?? 600_000
    const requested = request.timeoutMs ?? this.config.timeoutMs ?? 120_000
    const timeoutMs = Math.max(1, Math.min(Math.floor(requested), max))
    const outputBytes = Math.max(2, request.outputBytes ?? this.config.outputBytes ?? 32_768)
    const extra = request.env ?? {}
    const env = this.baseEnv()
    Object.assign(env, QUIET_ENV, extra)
    return {
      command: request.command,
      workdir,
      timeoutMs,
      graceMs: this.config.graceMs ?? 2000,
      headBytes: Math.floor(outputBytes / 2),
      tailBytes: Math.ceil(outputBytes / 2),
      env,
      trustedEnv: Object.keys(extra),
      ...(request.signal ? { signal: request.signal } : {}),
    }
  }

  /** The environment commands start from: this process's (a remote world uses the remote login's). */
  protected baseEnv(): Record<string, string> {
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value
    return env
  }

  /** The argv that runs `spec` (bash-sandbox wraps it). */
  protected async argv(spec: ShellSpec): Promise<string[]> {
    return [this.config.bash ?? 'bash', '-c', spec.command]
  }

  async start(spec: ShellSpec): Promise<ShellProcess> {
    return (await this.launch(spec)).process
  }

  async run(spec: ShellSpec): Promise<ShellResult> {
    const { process, expire } = await this.launch(spec)
    const timer = setTimeout(expire, spec.timeoutMs)
    try {
      return await process.done
    } finally {
      clearTimeout(timer)
    }
  }

  private async launch(spec: ShellSpec): Promise<{ process: ShellProcess; expire: () => void }> {
    // Through the caller's context, so the process belongs to the caller's plugin.
    const subprocess = (this.ctx.get('subprocess') ?? this.home.get('subprocess')) as Subprocess
    const argv = await this.argv(spec)
    const started = Date.now()
    const handle = await subprocess.spawn({
      argv,
      cwd: spec.workdir,
      env: spec.env,
      trustedEnv: spec.trustedEnv,
      stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
      graceMs: spec.graceMs,
      output: { headBytes: spec.headBytes, tailBytes: spec.tailBytes },
      ...(spec.signal ? { signal: spec.signal } : {}),
    })
    let timedOut = false
    const mode = spec.policy?.mode
    const done = handle.done.then(
      (exit): ShellResult => ({
        exitCode: exit.exitCode,
        signal: exit.signal,
        timedOut,
        aborted: !timedOut && exit.terminated && spec.signal?.aborted === true,
        durationMs: Date.now() - started,
        output: exit.output,
        ...(mode ? { sandbox: mode } : {}),
        sandboxDenied: looksLikeSandboxDenial(exit.exitCode, exit.output.text, mode),
      }),
    )
    const terminate = () => handle.terminate().then(() => done)
    const expire = () => {
      timedOut = true
      void terminate()
    }
    return { process: { spec, handle, done, terminate }, expire }
  }
}

export default LocalBash
