// @dsh/world/fs/sandbox: the local file system behind the sandbox policy's mutation fence. Reads are not
// fenced. A mutation's target is canonicalized (symlinks of its deepest existing ancestor resolved)
// and must lie in a writable root of the call's policy; the check runs again right before the
// publish, and the write goes to the canonical path, so a link swapped in between is refused.
// This narrows the symlink race; it cannot defeat a hostile writer in this same process.
// Reads of the policy's secret paths (credentials, ~/.ssh...) are refused with FS_SECRET_DENIED,
// checked on the canonical path so a symlink in the workspace does not lead around it. Writes to the
// policy's protected paths (agent configuration, git hooks) are refused with FS_PROTECTED_PATH: the
// caller asks a person and retries with a policy that lifts that one path.
import type { Context } from '@dsh/kernel'
import { canonicalPath, isWithin, type SandboxPolicy } from '../sandbox/index.js'
import { type FsCallOptions, fsError } from './index.js'
import type { FileIo } from './io.js'
import { LocalFs, type LocalFsConfig } from './local.js'

export class SandboxFs extends LocalFs {
  static override readonly provide = 'fs'
  static readonly inject = ['sandboxPolicy']
  private readonly home: Context

  constructor(ctx: Context, config: LocalFsConfig = {}, io?: FileIo) {
    super(ctx, config, io)
    this.home = ctx
  }

  /** The policy a call runs under: its own (an approved escalation) or its session's. */
  policyFor(options: FsCallOptions): SandboxPolicy {
    if (options.policy) return options.policy
    return this.home.sandboxPolicy.resolve(options.sessionId)
  }

  /** The path with its existing ancestors' symlinks resolved (on the machine the files live on). */
  protected async canonical(path: string): Promise<string> {
    return canonicalPath(path)
  }

  protected override async readFence(abs: string, options: FsCallOptions): Promise<void> {
    const secrets = this.policyFor(options).secretPaths
    if (secrets.length === 0) return
    const target = await this.canonical(abs)
    const secret = secrets.find((path) => isWithin(target, path))
    if (secret === undefined) return
    const where = target === abs ? abs : `${abs} (which resolves to ${target})`
    throw fsError(
      'FS_SECRET_DENIED',
      `reading ${where} is not allowed: ${secret} holds credentials and is hidden from tools (the sandbox policy's secret paths)`,
      { path: abs, target, secret },
    )
  }

  protected override async fence(abs: string, options: FsCallOptions): Promise<string> {
    const policy = this.policyFor(options)
    if (policy.mode === 'danger-full-access') return abs
    const target = await this.canonical(abs)
    if (!policy.writableRoots.some((root) => isWithin(target, root))) {
      const where = target === abs ? abs : `${abs} (which resolves to ${target})`
      throw fsError(
        'FS_SANDBOX_DENIED',
        policy.mode === 'read-only'
          ? `writing ${where} is not allowed: the sandbox is read-only`
          : `writing ${where} is not allowed: it is outside the writable roots (${policy.writableRoots.join(', ')})`,
        { path: abs, target, mode: policy.mode, writableRoots: [...policy.writableRoots] },
      )
    }
    // Writable by mode, but configuring the agent or running code on git actions: a person decides.
    const guarded = policy.protectedPaths.find((entry) => isWithin(target, entry.path))
    if (guarded) {
      const where = target === abs ? abs : `${abs} (which resolves to ${target})`
      throw fsError('FS_PROTECTED_PATH', `writing ${where} needs the user's approval: ${guarded.path} ${guarded.why}`, {
        path: abs,
        target,
        protected: guarded.path,
        why: guarded.why,
        mode: policy.mode,
      })
    }
    return target
  }
}

export default SandboxFs
