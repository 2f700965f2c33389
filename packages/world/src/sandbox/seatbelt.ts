// @dsh/world/sandbox/seatbelt: confines processes on macOS with `sandbox-exec` and a generated Seatbelt
// profile that mirrors the bubblewrap policy: read everything but the secret paths, write only the
// writable roots (and the terminal devices), network per the policy. `sandbox-exec` is deprecated by
// Apple but still shipped and used by other coding agents. This module is only unit-tested (the
// profile text per mode): the project's CI runs Linux and cannot execute it.
import { existsSync } from 'node:fs'
import { type Context, Service } from '@dsh/kernel'
import { requireConfinement, type Sandbox, type SandboxAvailability, type SandboxPolicy } from './index.js'

export interface SeatbeltConfig {
  /** The sandbox-exec executable. Default `/usr/bin/sandbox-exec`. */
  command?: string
}

/** A Seatbelt string literal. */
function quote(path: string): string {
  return `"${path.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
}

/**
 * The profile for `policy` (never called for danger-full-access, which runs unconfined). Later rules
 * win in Seatbelt, so the secret denials come after the broad allowances.
 */
export function seatbeltProfile(policy: SandboxPolicy): string {
  const lines = [
    '(version 1)',
    '(deny default)',
    '(allow process-exec process-fork)',
    '(allow signal (target same-sandbox))',
    '(allow sysctl-read mach-lookup ipc-posix-shm)',
    '(allow file-read*)',
    '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/") (regex #"^/dev/ttys"))',
  ]
  if (policy.writableRoots.length > 0) {
    lines.push(`(allow file-write* ${policy.writableRoots.map((root) => `(subpath ${quote(root)})`).join(' ')})`)
  }
  if (policy.network === 'on') lines.push('(allow network*)')
  for (const secret of policy.secretPaths) lines.push(`(deny file-read* file-write* (subpath ${quote(secret)}))`)
  // Protected paths (git hooks, agent configuration): denied after the allowances, existing or not.
  for (const entry of policy.protectedPaths ?? []) lines.push(`(deny file-write* (subpath ${quote(entry.path)}))`)
  return `${lines.join('\n')}\n`
}

export class SeatbeltSandbox extends Service implements Sandbox {
  static readonly provide = 'sandbox'
  readonly mechanism = 'seatbelt'
  private readonly config: SeatbeltConfig

  constructor(ctx: Context, config: SeatbeltConfig = {}) {
    super(ctx, 'sandbox')
    this.config = config ?? {}
  }

  availability(): Promise<SandboxAvailability> {
    const command = this.config.command ?? '/usr/bin/sandbox-exec'
    if (process.platform !== 'darwin') {
      return Promise.resolve({ usable: false, detail: `Seatbelt needs macOS (this is ${process.platform})` })
    }
    if (!existsSync(command)) return Promise.resolve({ usable: false, detail: `${command} is missing` })
    return Promise.resolve({ usable: true, detail: command })
  }

  async confine(argv: readonly string[], policy: SandboxPolicy, _options: { cwd: string }): Promise<string[]> {
    if (!(await requireConfinement(this, policy))) return [...argv]
    // sandbox-exec has no chdir option: the spawn's own cwd is inherited.
    return [this.config.command ?? '/usr/bin/sandbox-exec', '-p', seatbeltProfile(policy), ...argv]
  }
}

export default SeatbeltSandbox
