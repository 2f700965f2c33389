// @dsh/sandbox/bwrap: confines processes with bubblewrap. The whole filesystem is mounted read-only,
// the policy's writable roots are bound read-write on top, its secret paths are masked (an empty
// read-only tmpfs over a directory, /dev/null over a file), /dev and /proc are fresh, the network is
// cut when the policy says `off`, and the process gets its own PID namespace so that its whole tree
// dies with it. Activates even when bwrap is missing:
// availability is probed on first use and `confine` then fails closed, per call.
import { execFile } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { type Context, Service } from '@dsh/kernel'
import { requireConfinement, type Sandbox, type SandboxAvailability, type SandboxPolicy } from './index.js'

export interface BwrapConfig {
  /** The bwrap executable. Default: `bwrap` on PATH. */
  command?: string
  /** Cut the network off in every confined call, whatever the policy's `network` says. Default false. */
  isolateNetwork?: boolean
}

function probe(command: string): Promise<SandboxAvailability> {
  return new Promise((resolve) => {
    execFile(
      command,
      ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--die-with-parent', 'true'],
      { timeout: 5000 },
      (error, _stdout, stderr) => {
        if (!error) resolve({ usable: true, detail: command })
        else {
          const why = (error as { code?: unknown }).code === 'ENOENT' ? 'not installed' : stderr.trim() || error.message
          resolve({ usable: false, detail: `bubblewrap (${command}) is not usable: ${why}` })
        }
      },
    )
  })
}

/** bwrap arguments hiding `path`: nothing when it vanished since the policy listed it. */
function maskArgs(path: string): string[] {
  try {
    return statSync(path).isDirectory() ? ['--tmpfs', path, '--remount-ro', path] : ['--ro-bind', '/dev/null', path]
  } catch {
    return []
  }
}

export class BwrapSandbox extends Service implements Sandbox {
  static readonly provide = 'sandbox'
  readonly mechanism = 'bwrap'
  private probed: Promise<SandboxAvailability> | undefined
  private readonly config: BwrapConfig

  constructor(ctx: Context, config: BwrapConfig = {}) {
    super(ctx, 'sandbox')
    this.config = config ?? {}
  }

  availability(): Promise<SandboxAvailability> {
    if (process.platform !== 'linux') {
      return Promise.resolve({ usable: false, detail: `bubblewrap needs Linux (this is ${process.platform})` })
    }
    this.probed ??= probe(this.config.command ?? 'bwrap')
    return this.probed
  }

  async confine(argv: readonly string[], policy: SandboxPolicy, options: { cwd: string }): Promise<string[]> {
    if (!(await requireConfinement(this, policy))) return [...argv]
    const args = [this.config.command ?? 'bwrap', '--ro-bind', '/', '/']
    for (const root of policy.writableRoots) if (existsSync(root)) args.push('--bind', root, root)
    // Masks come after the binds: a secret inside a writable root (a HOME under /tmp) is still hidden.
    for (const secret of policy.secretPaths) args.push(...maskArgs(secret))
    args.push('--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--die-with-parent')
    if (policy.network === 'off' || this.config.isolateNetwork) args.push('--unshare-net')
    args.push('--chdir', options.cwd, '--', ...argv)
    return args
  }
}

export default BwrapSandbox
