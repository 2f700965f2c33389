// A session's permission mode (a sandbox policy preset) and the modes it may switch to. Needs a
// sandbox policy row; without one a session has no mode.
import { parseCommand } from '@dsh/interaction'
import { HarnessError } from '@dsh/kernel'
import { isSandboxMode, isStrictlyWider } from '@dsh/world/sandbox'
import type { HostAccess } from './access.js'

export class HostModes {
  constructor(private readonly host: HostAccess) {}

  /** The session's permission mode, when a sandbox policy row is loaded. */
  of(sessionId: string): string | undefined {
    return this.host.ctx.get('sandboxPolicy')?.mode(sessionId)
  }

  /** The permission presets a session may switch to. */
  list(): string[] {
    const policy = this.host.ctx.get('sandboxPolicy')
    return policy ? Object.keys(policy.presets()) : []
  }

  /**
   * Whether switching to `mode` (a preset or a mode name) would let the session do more than now: a
   * wider sandbox mode, or the network turned on. An unknown name is not a widening (`set` refuses it).
   */
  widens(sessionId: string, mode: string): boolean {
    const policy = this.host.ctx.get('sandboxPolicy')
    if (!policy) return false
    const preset = policy.presets()[mode]
    const wanted = preset?.mode ?? (isSandboxMode(mode) ? mode : undefined)
    if (wanted === undefined) return false
    if (isStrictlyWider(wanted, policy.mode(sessionId))) return true
    return preset?.network === 'on' && policy.network(sessionId) === 'off'
  }

  /**
   * Whether the /command `line` would let the session do more than now: `/permissions MODE` that
   * widens (see `widens`), `/permissions never` (no more questions) or `/permissions allow RULE` (a
   * rule that answers questions). Any other line is not a widening.
   */
  commandWidens(sessionId: string, line: string): boolean {
    const command = parseCommand(line)
    if (command?.name !== 'permissions' || !command.args) return false
    if (/^allow\s+\S/.test(command.args)) return true
    if (command.args === 'never') return this.host.ctx.get('approval')?.policy(sessionId) !== 'never'
    return this.widens(sessionId, command.args)
  }

  /**
   * Switches an attached session's permission mode, and its network when `options.network` names one
   * (logged as `sandbox/mode`). Throws `NO_SANDBOX_POLICY`, `SESSION_NOT_ATTACHED`, `SANDBOX_MODE_INVALID`.
   */
  set(sessionId: string, mode: string, options: { network?: string } = {}): string {
    const policy = this.host.ctx.get('sandboxPolicy')
    if (!policy) throw new HarnessError('NO_SANDBOX_POLICY', 'this profile has no sandbox policy row', {})
    this.host.agent(sessionId)
    const applied = policy.setMode(sessionId, mode, options.network ? { network: options.network } : {})
    this.host.changed(sessionId)
    return applied
  }
}
