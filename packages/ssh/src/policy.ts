// @dsh/ssh/policy: `ctx.sandboxPolicy` for the remote world. Modes, presets, escalation and the
// session's logged mode work as in `@dsh/world/sandbox/policy`; the paths are the remote machine's: the
// workspace canonicalized there, its temp directory, and the credential stores under the remote home.
// Every policy names where it applies, so the model's sandbox note says which machine it works on.
import { posix } from 'node:path'
import type { Context } from '@dsh/kernel'
import { type ProtectedPath, protectedPaths } from '@dsh/world/sandbox'
import LocalSandboxPolicy, { homeSecrets, type SandboxPolicyConfig } from '@dsh/world/sandbox/policy'
import type { RemoteInfo, SshConnection } from './index.js'

export class RemoteSandboxPolicy extends LocalSandboxPolicy {
  static readonly inject = ['ssh']
  private readonly ssh: SshConnection

  constructor(ctx: Context, config: SandboxPolicyConfig = {}) {
    super(ctx, config)
    this.ssh = ctx.ssh
  }

  private get info(): RemoteInfo {
    return this.ssh.info
  }

  protected override canonical(path: string): string {
    const resolved = posix.resolve(path)
    return resolved === posix.resolve(this.ssh.target.path) ? this.info.root : resolved
  }

  protected override defaultWorkspace(): string {
    return this.info.root
  }

  protected override tempRoots(): string[] {
    return [...new Set(['/tmp', this.info.tmp])]
  }

  protected override secretsFor(_workspace: string): string[] {
    return homeSecrets('linux').map((rel) => posix.join(this.info.home, rel))
  }

  /** The remote machine has no dsh home: only the workspace's protected names and the policy's own. */
  protected override guardedFor(workspace: string): ProtectedPath[] {
    return protectedPaths(workspace, (path) => this.canonical(path), this.config.protectedPaths)
  }

  protected override location(): string {
    return `on the remote machine ${this.ssh.describe()} over SSH`
  }
}

export default RemoteSandboxPolicy
