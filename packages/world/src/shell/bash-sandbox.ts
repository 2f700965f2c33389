// @dsh/world/shell/bash-sandbox: bash-local's mechanism under the session's sandbox policy. `resolve`
// attaches the policy (the request's own, e.g. an approved escalation, or the session's); the argv is
// wrapped by `ctx.sandbox`. When confinement is needed but unusable, run/start reject with
// `SANDBOX_UNAVAILABLE`: the command never runs unconfined by accident. danger-full-access is the
// only mode that runs without a wrapper. A confined command's environment names no agent socket
// (ssh-agent, the D-Bus session bus, gpg-agent, the runtime directory): the sandbox hides them, and a
// variable pointing at one would only invite a tool to try.
import type {} from '../sandbox/index.js'
import { LocalBash } from './bash-local.js'
import type { ShellRequest, ShellSpec } from './index.js'

/** Variables that point a process at the user's agents; dropped from confined commands. */
export const AGENT_ENV: readonly string[] = Object.freeze([
  'SSH_AUTH_SOCK',
  'SSH_AGENT_PID',
  'DBUS_SESSION_BUS_ADDRESS',
  'GPG_AGENT_INFO',
  'XDG_RUNTIME_DIR',
])

export class SandboxBash extends LocalBash {
  static override readonly inject = ['subprocess', 'sandbox', 'sandboxPolicy']
  override readonly confines: boolean = true

  override resolve(request: ShellRequest): ShellSpec {
    const spec = super.resolve(request)
    const policy = request.policy ?? this.home.sandboxPolicy.resolve(request.sessionId)
    if (policy.mode === 'danger-full-access') return { ...spec, policy }
    const env = { ...spec.env }
    for (const name of AGENT_ENV) if (!spec.trustedEnv?.includes(name)) delete env[name]
    return { ...spec, env, policy }
  }

  protected override async argv(spec: ShellSpec): Promise<string[]> {
    const argv = await super.argv(spec)
    const policy = spec.policy ?? this.home.sandboxPolicy.resolve()
    return this.home.sandbox.confine(argv, policy, { cwd: spec.workdir })
  }
}

export default SandboxBash
