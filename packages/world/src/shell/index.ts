// @dsh/world/shell: the shell seam `ctx.shell`. `resolve` turns a raw request into a fully specified spec
// (all defaults decided there, once); `run` executes it in the foreground, where a non-zero exit, a
// timeout and an abort are ordinary results; `start` hands back a live process (no timeout) for jobs.
// Only infrastructure failures reject: the executable cannot start, or a requested sandbox is unusable.
import type { SandboxMode, SandboxPolicy } from '../sandbox/index.js'
import type { OutputSnapshot, SubprocessHandle } from '../subprocess/index.js'

declare module 'cordis' {
  interface Context {
    shell: Shell
  }
}

/** What a caller asks for. Everything optional is defaulted by the provider's `resolve`. */
export interface ShellRequest {
  command: string
  /** Absolute working directory (default: the provider's cwd). Not containment. */
  workdir?: string
  /** Foreground deadline in milliseconds (clamped to the provider's maximum). */
  timeoutMs?: number
  /** The session the command runs for: selects its sandbox policy. */
  sessionId?: string
  /** A per-call policy (an approved escalation) instead of the session's. */
  policy?: SandboxPolicy
  /** Extra variables the caller vouches for (kept even if they look secret, e.g. `DSH_SESSION_ID`). */
  env?: Record<string, string>
  /** Output bytes kept in memory (split between head and tail). */
  outputBytes?: number
  signal?: AbortSignal
}

/** A fully specified command: nothing is guessed after `resolve`. */
export interface ShellSpec {
  command: string
  workdir: string
  timeoutMs: number
  graceMs: number
  headBytes: number
  tailBytes: number
  /** The child's complete environment before scrubbing. */
  env: Record<string, string>
  trustedEnv: string[]
  /** The confinement to apply; `undefined` means the provider does not confine (bash-local). */
  policy?: SandboxPolicy
  signal?: AbortSignal
}

export interface ShellResult {
  exitCode: number | null
  signal: string | null
  /** The foreground deadline passed and the tree was killed. */
  timedOut: boolean
  /** The caller's signal aborted the command and the tree was killed. */
  aborted: boolean
  durationMs: number
  output: OutputSnapshot
  /** The sandbox mode the command ran under; `undefined` when unconfined by this provider. */
  sandbox?: SandboxMode
  /** The command failed in a way that looks like a sandbox refusal (read-only file system etc.). */
  sandboxDenied: boolean
}

/** A started command (`start`). Owned by the caller: terminate it or hand it to `ctx.jobs`. */
export interface ShellProcess {
  readonly spec: ShellSpec
  readonly handle: SubprocessHandle
  /** Settles once the command and its whole tree are gone; never rejects. */
  readonly done: Promise<ShellResult>
  terminate(): Promise<ShellResult>
}

/** The seam. Providers: `@dsh/world/shell/bash-local`, `@dsh/world/shell/bash-sandbox`. */
export interface Shell {
  /** `undefined` for an unconfined provider; consumers then must not offer sandbox escalation. */
  readonly confines: boolean
  /** Fills every default. Throws `SHELL_REQUEST_INVALID` for an empty command or a relative workdir. */
  resolve(request: ShellRequest): ShellSpec
  /** Runs in the foreground. Rejects with `SUBPROCESS_SPAWN_FAILED` or `SANDBOX_UNAVAILABLE`. */
  run(spec: ShellSpec): Promise<ShellResult>
  /** Starts without a deadline. Rejects like `run`. */
  start(spec: ShellSpec): Promise<ShellProcess>
}

const DENIAL = /Read-only file system|Operation not permitted|Permission denied/

/** The sandbox-denial heuristic on a failed confined command. */
export function looksLikeSandboxDenial(exitCode: number | null, text: string, mode: SandboxMode | undefined): boolean {
  return mode !== undefined && mode !== 'danger-full-access' && exitCode !== 0 && DENIAL.test(text)
}

/**
 * The status lines a model reads after a command's output: `[exit code: N]`, `[timed out after Ns:
 * the process tree was killed]`, `[aborted: ...]`, `[killed by signal ...]`. Empty for exit 0.
 */
export function statusMarkers(result: ShellResult, timeoutMs: number): string[] {
  const markers: string[] = []
  if (result.timedOut) markers.push(`[timed out after ${formatDuration(timeoutMs)}: the process tree was killed]`)
  else if (result.aborted) markers.push('[aborted: the command was cancelled and its process tree was killed]')
  else if (result.exitCode === null && result.signal) markers.push(`[killed by signal ${result.signal}]`)
  if (result.exitCode !== null && result.exitCode !== 0) markers.push(`[exit code: ${result.exitCode}]`)
  return markers
}

function formatDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`
}
