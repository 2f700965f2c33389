// Human /commands (`/model`, `/compact`...) run for an attached session without a model turn. Needs
// a commands row (interaction-commands); without one no line is a command.
import type { CommandOutcome } from '@dsh/interaction'
import { HarnessError } from '@dsh/kernel'
import type { HostAccess } from './access.js'

export class HostCommands {
  constructor(private readonly host: HostAccess) {}

  /**
   * Whether a person's `line` is a /command, registered or not (an unknown one is answered
   * `COMMAND_UNKNOWN` and sends nothing to the model). Without a commands row no line is one.
   */
  recognizes(line: string): boolean {
    return this.host.ctx.get('commands')?.routesToCommand(line) ?? false
  }

  /** Runs a /command for an attached session. Throws `COMMANDS_UNAVAILABLE`, `SESSION_NOT_ATTACHED`. */
  async run(sessionId: string, line: string, signal?: AbortSignal): Promise<CommandOutcome> {
    const agent = this.host.agent(sessionId)
    const commands = this.host.ctx.get('commands')
    if (!commands) {
      throw new HarnessError('COMMANDS_UNAVAILABLE', 'this profile has no commands row (interaction-commands)', {})
    }
    return commands.dispatch(line, { session: agent.session, agent, ...(signal ? { signal } : {}) })
  }
}
