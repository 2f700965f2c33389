// @dsh/world/sandbox/bwrap: confines processes with bubblewrap. The whole filesystem is mounted read-only,
// the policy's writable roots are bound read-write on top, its secret paths are masked (an empty
// read-only tmpfs over a directory, /dev/null over a file), its existing protected paths (git hooks, agent
// configuration) are bound read-only again, /dev and /proc are fresh, the network is
// cut when the policy says `off`, and the process gets its own PID namespace so that its whole tree
// dies with it. Activates even when bwrap is missing:
// availability is probed on first use and `confine` then fails closed, per call.
import { execFile } from 'node:child_process'
import { statSync } from 'node:fs'
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

/** What `bwrapArgv` needs to know about the machine the command runs on. */
export interface BwrapArgvInput {
  command: string
  argv: readonly string[]
  policy: SandboxPolicy
  cwd: string
  /** The kind of an existing path there, `undefined` when it does not exist. */
  kindOf: (path: string) => 'directory' | 'file' | undefined
  isolateNetwork: boolean
}

/**
 * The bwrap command line confining `argv` under `policy`: everything read-only, the writable roots
 * bound read-write, secret paths masked (after the binds, so a secret inside a writable root stays
 * hidden), fresh /dev and /proc, its own PID namespace, the network cut when the policy says `off`.
 */
export function bwrapArgv(input: BwrapArgvInput): string[] {
  const { policy } = input
  const args = [input.command, '--ro-bind', '/', '/']
  for (const root of policy.writableRoots) if (input.kindOf(root)) args.push('--bind', root, root)
  // Protected paths that exist are read-only again on top of the writable binds (a missing one cannot
  // be bound without creating it in the workspace: see the README's limits).
  for (const entry of policy.protectedPaths ?? []) {
    if (input.kindOf(entry.path)) args.push('--ro-bind', entry.path, entry.path)
  }
  for (const secret of policy.secretPaths) {
    const kind = input.kindOf(secret)
    if (kind === 'directory') args.push('--tmpfs', secret, '--remount-ro', secret)
    else if (kind === 'file') args.push('--ro-bind', '/dev/null', secret)
  }
  args.push('--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--die-with-parent')
  if (policy.network === 'off' || input.isolateNetwork) args.push('--unshare-net')
  args.push('--chdir', input.cwd, '--', ...input.argv)
  return args
}

function localKind(path: string): 'directory' | 'file' | undefined {
  try {
    return statSync(path).isDirectory() ? 'directory' : 'file'
  } catch {
    return undefined
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
    return bwrapArgv({
      command: this.config.command ?? 'bwrap',
      argv,
      policy,
      cwd: options.cwd,
      kindOf: localKind,
      isolateNetwork: this.config.isolateNetwork === true,
    })
  }
}

export default BwrapSandbox
