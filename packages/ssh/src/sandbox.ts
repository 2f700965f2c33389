// @dsh/ssh/sandbox: `ctx.sandbox` on the remote machine: bubblewrap there, probed once over the
// connection, with the same mounts as `@dsh/world/sandbox/bwrap` (the paths' kinds are read over SFTP).
// When the remote has no usable bwrap, confined calls fail closed like locally, and the bash tool's
// approval-gated fallback applies.
import { type Context, Service } from '@dsh/kernel'
import { requireConfinement, type Sandbox, type SandboxAvailability, type SandboxPolicy } from '@dsh/world/sandbox'
import { bwrapArgv } from '@dsh/world/sandbox/bwrap'
import type { SshConnection } from './index.js'

export interface RemoteBwrapConfig {
  /** The bwrap executable on the remote machine. Default `bwrap`. */
  command?: string
  /** Cut the network off in every confined call. Default false. */
  isolateNetwork?: boolean
}

export class RemoteBwrap extends Service implements Sandbox {
  static readonly provide = 'sandbox'
  static readonly inject = ['ssh']
  readonly mechanism = 'bwrap (remote)'
  private probed: Promise<SandboxAvailability> | undefined
  private readonly config: RemoteBwrapConfig
  private readonly ssh: SshConnection

  constructor(ctx: Context, config: RemoteBwrapConfig = {}) {
    super(ctx, 'sandbox')
    this.config = config ?? {}
    this.ssh = ctx.ssh
  }

  availability(): Promise<SandboxAvailability> {
    const command = this.config.command ?? 'bwrap'
    const where = this.ssh.target.host
    this.probed ??= this.ssh
      .run(`${command} --ro-bind / / --dev /dev --proc /proc --unshare-pid --die-with-parent true`)
      .then(
        (result) =>
          result.code === 0
            ? { usable: true, detail: `${command} on ${where}` }
            : {
                usable: false,
                detail: `bubblewrap (${command}) is not usable on ${where}: ${result.code === 127 ? 'not installed' : result.stderr.trim() || `exit ${result.code}`}`,
              },
        (error: Error) => ({ usable: false, detail: `cannot probe bubblewrap on ${where}: ${error.message}` }),
      )
    return this.probed
  }

  async confine(argv: readonly string[], policy: SandboxPolicy, options: { cwd: string }): Promise<string[]> {
    if (!(await requireConfinement(this, policy))) return [...argv]
    const sftp = await this.ssh.sftp()
    const paths = [...policy.writableRoots, ...policy.secretPaths]
    const kinds = new Map<string, 'directory' | 'file'>()
    await Promise.all(
      paths.map(
        (path) =>
          new Promise<void>((resolve) =>
            sftp.stat(path, (error, stats) => {
              if (!error) kinds.set(path, stats.isDirectory() ? 'directory' : 'file')
              resolve()
            }),
          ),
      ),
    )
    return bwrapArgv({
      command: this.config.command ?? 'bwrap',
      argv,
      policy,
      cwd: options.cwd,
      kindOf: (path) => kinds.get(path),
      isolateNetwork: this.config.isolateNetwork === true,
    })
  }
}

export default RemoteBwrap
