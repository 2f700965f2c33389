// /plan and /goal: the human side of plan mode and goals (registered when `ctx.commands` exists).

import type { Context } from '@dsh/kernel'
import { type CommandContext, requireSession, usageError } from '../index.js'
import type { WorkStateService } from './index.js'

function planStatus(service: WorkStateService, context: CommandContext): string {
  const plan = service.state(requireSession(context)).plan
  if (!plan.on) return 'plan mode is off'
  return plan.proposed ? `plan mode is on; proposed plan:\n${plan.proposed}` : 'plan mode is on; no plan proposed yet'
}

export function registerCommands(ctx: Context, service: WorkStateService): void {
  ctx.commands.register({
    name: 'plan',
    description: 'Plan mode: on, off, accept (the proposed plan), or show',
    usage: '[on | off | accept | show]',
    run(args, context) {
      const session = requireSession(context)
      const verb = args || 'on'
      if (verb === 'show') return planStatus(service, context)
      if (verb === 'on') {
        service.setPlanMode(session, true, 'user')
        return 'plan mode is on: changing tools are refused until you accept a plan (/plan accept) or /plan off'
      }
      if (verb === 'off') {
        service.setPlanMode(session, false, 'user', 'switched off by the user')
        return 'plan mode is off'
      }
      if (verb === 'accept') {
        const plan = service.acceptPlan(session)
        // Accepting hands the plan back to the agent as its next turn.
        if (plan && context.agent && !context.agent.disposed) {
          context.agent.followup(`The user accepted your plan; plan mode is off. Implement it now.\n\n${plan}`)
        }
        return plan ? 'plan accepted; plan mode is off' : 'plan mode is off (no plan had been proposed)'
      }
      throw usageError('plan', '[on | off | accept | show]', `unknown argument "${verb}"`)
    },
  })

  ctx.commands.register({
    name: 'goal',
    description: 'Set the session goal (the agent keeps working until it is met), show it, or clear it',
    usage: '[<objective> | clear]',
    run(args, context) {
      const session = requireSession(context)
      if (!args) {
        const goal = service.state(session).goal
        return goal
          ? `goal (${goal.status}, ${goal.continuations}/${goal.maxContinuations} continuations): ${goal.text}${goal.summary ? `\n${goal.summary}` : ''}`
          : 'no goal'
      }
      if (args === 'clear') {
        service.endGoal(session, 'abandoned', 'user')
        return 'goal cleared'
      }
      const goal = service.setGoal(session, args)
      // Setting a goal starts work on it when an agent is there to do it.
      if (context.agent && !context.agent.disposed) context.agent.followup(`Goal: ${goal.text}`)
      return `goal set (at most ${goal.maxContinuations} continuations): ${goal.text}`
    },
  })
}
