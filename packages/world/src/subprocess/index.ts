// @dsh/world/subprocess: the process seam `ctx.subprocess`. Callers hand a fully specified spawn spec (no
// defaults are guessed here); a provider starts it as its own process group, captures bounded output
// (head + tail in memory, everything in a spill file once it overflows) and terminates whole trees.
import { HarnessError } from '@dsh/kernel'

declare module 'cordis' {
  interface Context {
    subprocess: Subprocess
  }
}

/** What the child reads on stdin: nothing (`ignore`) or a fixed text, after which stdin closes. */
export type StdinDisposition = 'ignore' | { text: string }
/** `pipe` captures the stream into the handle's output; `ignore` discards it at the OS level. */
export type OutputDisposition = 'pipe' | 'ignore'

/**
 * A fully specified spawn. Nothing is interpreted by a shell: `argv[0]` is the executable (looked up
 * on `env.PATH`), the rest are its arguments. Every field is required except `signal` and `trustedEnv`.
 */
export interface SpawnSpec {
  argv: readonly string[]
  /** Absolute working directory. */
  cwd: string
  /** The child's whole environment. Secret-looking names are removed (see `scrubEnv`). */
  env: Readonly<Record<string, string>>
  /** Names in `env` the caller vouches for: kept even when they look secret (e.g. `DSH_SESSION_ID`). */
  trustedEnv?: readonly string[]
  stdio: { stdin: StdinDisposition; stdout: OutputDisposition; stderr: OutputDisposition }
  /** Milliseconds between SIGTERM and SIGKILL of the process group when terminating. */
  graceMs: number
  /** Caller-owned cancellation: aborting it terminates the tree (same as `terminate()`). */
  signal?: AbortSignal
  /** Output bytes kept in memory: the first `headBytes` and the last `tailBytes` of stdout+stderr. */
  output: { headBytes: number; tailBytes: number }
}

/** A bounded view of a process's combined output (stdout and stderr in arrival order). */
export interface OutputSnapshot {
  /** The whole output when it fits; otherwise head, an omission marker line, and tail. */
  text: string
  totalBytes: number
  /** True when `text` omits part of the output. */
  truncated: boolean
  /** The file holding the complete output; present once the output overflowed memory. */
  spillPath?: string
}

export interface SubprocessExit {
  /** The leader's exit code, or null when it died of a signal. */
  exitCode: number | null
  signal: NodeJS.Signals | null
  /** True when the exit was caused by `terminate()` or the spec's signal. */
  terminated: boolean
  /** Processes of the group that were still alive after SIGKILL and the wait bound (should be 0). */
  survivors: number
  output: OutputSnapshot
}

/** A raw slice of output read by byte position (the jobs cursor reads with this). */
export interface OutputRange {
  text: string
  /** Position after the returned bytes. */
  next: number
  /** Bytes before `start` that are no longer readable (never once the output is spilled). */
  lost: number
}

/** A started process group. `done` settles once the leader exited and the whole group is gone. */
export interface SubprocessHandle {
  readonly pid: number
  readonly argv: readonly string[]
  readonly startedAt: number
  /** Resolves with the exit; never rejects (a spawn failure rejects `spawn()` instead). */
  readonly done: Promise<SubprocessExit>
  readonly exited: boolean
  /**
   * SIGTERM to the whole group, SIGKILL after `graceMs`, then waits until no process of the group is
   * left. Idempotent: every call returns the same promise as the first. Safe after exit.
   */
  terminate(reason?: string): Promise<SubprocessExit>
  /** The bounded output so far. */
  output(): OutputSnapshot
  /** Output bytes from `start` (at most `maxBytes`), from memory or the spill file. */
  read(start: number, maxBytes: number): OutputRange
  /** Called with each chunk of output as it arrives; returns an unsubscribe. */
  onOutput(listener: (chunk: string) => void): () => void
}

/** The seam. Providers: `@dsh/world/subprocess/local`. */
export interface Subprocess {
  /**
   * Starts a process group. Rejects with `SUBPROCESS_SPEC_INVALID` for an incomplete spec and with
   * `SUBPROCESS_SPAWN_FAILED` when the OS refuses (missing executable, bad cwd). The handle belongs to
   * the caller's plugin: disposing it terminates the tree and waits for it.
   */
  spawn(spec: SpawnSpec): Promise<SubprocessHandle>
  /** Live handles (for diagnostics and invariants). */
  live(): readonly SubprocessHandle[]
  /** How process trees are tied to this process's life (probed once; for `dsh doctor`). */
  containment(): Promise<Containment>
}

/** The mechanism that makes every process tree die with dsh, even on SIGKILL of dsh. */
export interface Containment {
  /**
   * `pid-namespace`: the whole tree, `setsid` escapees included. `pdeathsig`: the direct child only.
   * `none`: process groups, reaped by `terminate()` and the owner's dispose, not on SIGKILL of dsh.
   */
  mechanism: 'pid-namespace' | 'pdeathsig' | 'none'
  /** Prepended to argv. */
  prefix: readonly string[]
  /** What was used, or what was probed and why it failed. */
  detail: string
}

const SECRET = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i

/**
 * Removes variables whose names contain KEY, TOKEN, SECRET, PASSWORD (PASSWD, CREDENTIAL) or start
 * with `DSH_`, except names listed in `trusted`. Returns a new object.
 */
export function scrubEnv(env: Readonly<Record<string, string | undefined>>, trusted: readonly string[] = []) {
  const keep = new Set(trusted)
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue
    if (!keep.has(name) && (SECRET.test(name) || name.startsWith('DSH_'))) continue
    out[name] = value
  }
  return out
}

const isCount = (value: unknown) => typeof value === 'number' && Number.isInteger(value) && value >= 0

/** Throws `SUBPROCESS_SPEC_INVALID` listing every missing or malformed field. */
export function checkSpawnSpec(spec: SpawnSpec): void {
  const problems: string[] = []
  if (!Array.isArray(spec?.argv) || spec.argv.length === 0 || spec.argv.some((a) => typeof a !== 'string')) {
    problems.push('argv must be a non-empty array of strings')
  }
  if (typeof spec?.cwd !== 'string' || !spec.cwd.startsWith('/')) problems.push('cwd must be an absolute path')
  if (!spec?.env || typeof spec.env !== 'object') problems.push('env must be an object')
  const stdio = spec?.stdio
  if (!stdio || !(stdio.stdin === 'ignore' || typeof (stdio.stdin as { text?: unknown })?.text === 'string')) {
    problems.push('stdio.stdin must be "ignore" or { text }')
  }
  for (const name of ['stdout', 'stderr'] as const) {
    if (stdio?.[name] !== 'pipe' && stdio?.[name] !== 'ignore')
      problems.push(`stdio.${name} must be "pipe" or "ignore"`)
  }
  if (!isCount(spec?.graceMs)) problems.push('graceMs must be an integer >= 0')
  if (!isCount(spec?.output?.headBytes) || !isCount(spec?.output?.tailBytes)) {
    problems.push('output.headBytes and output.tailBytes must be integers >= 0')
  }
  if (problems.length > 0) {
    throw new HarnessError('SUBPROCESS_SPEC_INVALID', `invalid spawn spec: ${problems.join('; ')}`, { problems })
  }
}
