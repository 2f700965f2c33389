// Process exit codes of `dsh`. Stable: scripts depend on them; add, never renumber.
// One table feeds both the code (`ExitCode`) and `dsh --help`, so the help cannot drift from it.

/** Each exit code with the one-line meaning `dsh --help` prints. */
const EXIT_CODES = {
  OK: { code: 0, meaning: 'success (for `run`: the turn completed)' },
  ERROR: { code: 1, meaning: 'unexpected error (DSH_DEBUG=1 prints the stack)' },
  USAGE: { code: 2, meaning: 'bad command-line usage (also: --resume of an unknown session, a missing --cwd)' },
  CONFIG: {
    code: 3,
    meaning:
      'configuration: profile, bundle, patch, plugin, preset, setting, expression, credentials, provider or model',
  },
  BOOT: { code: 4, meaning: 'the plugin tree did not fully activate (the audit lists why)' },
  NOT_AVAILABLE: { code: 5, meaning: 'the subcommand is not available in this version' },
  TURN_ERROR: { code: 6, meaning: '`run`: the turn ended with an error (model or runtime)' },
  ABORTED: { code: 7, meaning: '`run`: the turn was aborted (not by a signal to this process)' },
  BLOCKED: {
    code: 8,
    meaning: '`run`: a policy blocked the turn (pre-step rejection, step limit, cost budget reached)',
  },
  MAX_TOKENS: { code: 9, meaning: "`run`: the model's answer was cut off at its output limit" },
  SESSION_BUSY: { code: 10, meaning: 'the session is open in another process (the message names it)' },
  SESSION_CORRUPT: { code: 11, meaning: 'the session file is damaged: `dsh sessions repair ID` keeps its good prefix' },
  REWIND_CONFLICT: {
    code: 12,
    meaning: '`sessions rewind`: files changed by someone else; nothing was written (--overwrite replaces them)',
  },
  DIVERGED: {
    code: 13,
    meaning: '`replay`, `test`: a replay diverged from its recorded session (the report names where)',
  },
  NOT_VERIFIED: {
    code: 14,
    meaning:
      '`sessions verify`, `sessions sign`, `sessions import`: the hash chain or the signature does not check (the report names the event)',
  },
  FINDINGS: { code: 15, meaning: '`review --fail-on S`: a finding of severity S or worse was reported' },
  SIGINT: { code: 130, meaning: 'interrupted by SIGINT (the session is saved and resumable)' },
  SIGTERM: { code: 143, meaning: 'stopped by SIGTERM (the session is saved and resumable)' },
} as const satisfies Record<string, { code: number; meaning: string }>

type ExitCodeName = keyof typeof EXIT_CODES

/** Exit codes by name (`ExitCode.CONFIG === 3`). */
export const ExitCode = Object.fromEntries(Object.entries(EXIT_CODES).map(([name, { code }]) => [name, code])) as {
  readonly [K in ExitCodeName]: (typeof EXIT_CODES)[K]['code']
}

/** The exit-code list of `dsh --help`, one code a line, from the same table as `ExitCode`. */
export function exitCodeHelp(): string {
  const rows = Object.values(EXIT_CODES).map(({ code, meaning }) => `  ${String(code).padEnd(4)}  ${meaning}`)
  return `Exit codes:\n${rows.join('\n')}`
}

const CONFIG_CODES = /^(CONFIG_|PROFILE_|BUNDLE_|MODULE_|PLUGIN_|PRESET_)/

/** The exit code for an error that reached the top level. */
export function exitCodeFor(code: string | undefined): number {
  if (code === undefined) return ExitCode.ERROR
  if (code === 'BOOT_FAILED') return ExitCode.BOOT
  if (code === 'NOT_AVAILABLE') return ExitCode.NOT_AVAILABLE
  if (
    code === 'USAGE' ||
    code === 'SESSION_NOT_FOUND' ||
    code === 'PRESET_LOCKED' ||
    code === 'SESSION_ID_AMBIGUOUS' ||
    code.startsWith('ATTACHMENT_')
  )
    return ExitCode.USAGE
  if (code === 'SESSION_LEASED') return ExitCode.SESSION_BUSY
  if (code === 'SESSION_CORRUPT') return ExitCode.SESSION_CORRUPT
  if (code === 'SESSION_NOT_VERIFIED') return ExitCode.NOT_VERIFIED
  if (code === 'SESSION_EXISTS') return ExitCode.USAGE
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
