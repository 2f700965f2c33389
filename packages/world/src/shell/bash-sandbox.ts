// @dsh/world/shell/bash-sandbox: bash-local's mechanism under the session's sandbox policy. `resolve`
// attaches the policy (the request's own, e.g. an approved escalation, or the session's); the argv is
// wrapped by `ctx.sandbox`. When confinement is needed but unusable, run/start reject with
// `SANDBOX_UNAVAILABLE`: the command never runs unconfined by accident. danger-full-access is the
// only mode that runs without a wrapper.
import type {} from '../sandbox/index.js'
import { LocalBash } from './bash-local.js'
import type { ShellRequest, ShellSpec } from './index.js'

export class SandboxBash extends LocalBash {
  static override readonly inject = ['subprocess', 'sandbox', 'sandboxPolicy']
  override readonly confines: boolean = true

  override resolve(request: ShellRequest): ShellSpec {
    const spec = super.resolve(request)
    return { ...spec, policy: request.policy ?? this.home.sandboxPolicy.resolve(request.sessionId) }
  }

  protected override async argv(spec: ShellSpec): Promise<string[]> {
    const argv = await super.argv(spec)
    const policy = spec.policy ?? this.home.sandboxPolicy.resolve()
    return this.home.sandbox.confine(argv, policy, { cwd: spec.workdir })
  }
}

export default SandboxBash
