// @dsh/surfaces/agents: `/agents` in every surface with commands (the terminal chat, the web page,
// rpc): the same listing as `dsh agents` (`listAgents`): every agent running on this machine or the
// shared store, with state, where, model, cost and last activity.
import type { CommandContext } from '@dsh/interaction/commands'
import { type Context, toJsonSafe } from '@dsh/kernel'
import type {} from '@dsh/session/store/query'
import { agentLines, listAgents } from '../host/agents.js'

export const name = 'agents-command'
export const inject = ['commands']

export function apply(ctx: Context): void {
  ctx.commands.register({
    name: 'agents',
    description: 'Every agent running on this machine: chats, runs, background runs, subagents, with their state',
    async run(_args: string, _context: CommandContext) {
      const rows = await listAgents(ctx)
      if (rows.length === 0) return { text: 'no agent is running (dsh run --bg "<task>" starts one in the background)' }
      return {
        text: [
          ...agentLines(rows, Date.now()),
          '',
          'dsh sessions show ID prints a transcript; dsh agents stop ID stops one',
        ].join('\n'),
        data: toJsonSafe({ agents: rows }),
      }
    },
  })
}

export default { name, inject, apply }
