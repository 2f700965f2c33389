// Process exit codes of `dsh`. Stable: scripts depend on them; add, never renumber.
export const ExitCode = {
  /** Success (for `run`: the turn ended `completed`). */
  OK: 0,
  /** An unexpected error. */
  ERROR: 1,
  /** Bad command-line usage. */
  USAGE: 2,
  /** Configuration problem: profile, bundle, patch, expression, credentials. */
  CONFIG: 3,
  /** The plugin tree did not fully activate (the activation audit lists why). */
  BOOT: 4,
  /** The subcommand is not available in this version. */
  NOT_AVAILABLE: 5,
  /** `dsh run`: the turn ended with an error (model or runtime). */
  TURN_ERROR: 6,
  /** `dsh run`: the turn was aborted (not by a signal to this process). */
  ABORTED: 7,
  /** `dsh run`: a policy blocked the turn (pre-step rejection, step limit). */
  BLOCKED: 8,
  /** `dsh run`: the model's answer was cut off at its output limit. */
  MAX_TOKENS: 9,
  /** Interrupted by SIGINT / SIGTERM (128 + signal number). */
  SIGINT: 130,
  SIGTERM: 143,
} as const

const CONFIG_CODES = /^(CONFIG_|PROFILE_|BUNDLE_|MODULE_)/

/** The exit code for an error that reached the top level. */
export function exitCodeFor(code: string | undefined): number {
  if (code === undefined) return ExitCode.ERROR
  if (code === 'BOOT_FAILED') return ExitCode.BOOT
  if (code === 'NOT_AVAILABLE') return ExitCode.NOT_AVAILABLE
  if (code === 'USAGE') return ExitCode.USAGE
  return CONFIG_CODES.test(code) ? ExitCode.CONFIG : ExitCode.ERROR
}

/** Provider errors the user fixes in configuration: the key, the endpoint, the provider name, the account. */
const CONFIG_LLM_CODES = new Set(['AUTH', 'NO_ADAPTER', 'NETWORK', 'INSUFFICIENT_BALANCE'])

/** The exit code of a finished `dsh run` from its last turn's reason and provider error code. */
export function exitCodeForRun(reason: string, errorCode?: string, errorMessage?: string): number {
  switch (reason) {
    case 'completed':
      return ExitCode.OK
    case 'aborted':
    case 'interrupted':
      return ExitCode.ABORTED
    case 'blocked':
      return ExitCode.BLOCKED
    case 'max-tokens':
      return ExitCode.MAX_TOKENS
    default:
      if (errorCode && CONFIG_LLM_CODES.has(errorCode)) return ExitCode.CONFIG
      if (errorCode === 'BAD_REQUEST' && /model/i.test(errorMessage ?? '')) return ExitCode.CONFIG
      return ExitCode.TURN_ERROR
  }
}
