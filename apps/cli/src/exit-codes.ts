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
