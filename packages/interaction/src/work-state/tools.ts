// The model's side of the working state: `todo_write` (replace the todo list), `exit_plan_mode`
// (propose a plan; the user accepts it through `ctx.userQuestions` or /plan accept) and `goal_done`.

import { defineTool, ToolError } from '@dsh/agent/tools'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '../index.js'
import type { TodoItem } from './index.js'

function sessionOf(call: { sessionId?: string }): string {
  if (!call.sessionId) throw new ToolError('this tool needs a session', 'SESSION_NOT_FOUND')
  return call.sessionId
}

function rethrow(error: unknown): never {
  if (error instanceof HarnessError) throw new ToolError(error.message, error.code)
  throw error
}

export default {
  name: 'work-state-tools',
  inject: ['workState', 'tools'],
  apply(ctx: Context) {
    const todoWrite = defineTool<{ todos: TodoItem[] }>({
      name: 'todo_write',
      description: [
        'Replace your todo list for this session (send the whole list every time). Use it for work with',
        'several steps: keep exactly one item in_progress, mark items completed as soon as they are done.',
        'The current list is shown to you as context whenever it changes.',
      ].join(' '),
      parameters: {
        type: 'object',
        properties: {
          todos: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                content: { type: 'string', minLength: 1 },
                status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] },
                priority: { type: 'string', enum: ['high', 'medium', 'low'] },
              },
              required: ['content', 'status'],
              additionalProperties: false,
            },
          },
        },
        required: ['todos'],
        additionalProperties: false,
      },
      presentation: (args) => ({ kind: 'generic', title: 'Todo list', subtitle: `${args.todos.length} items` }),
      execute(args, call) {
        let todos: TodoItem[] = []
        try {
          todos = ctx.workState.writeTodos(sessionOf(call), args.todos as TodoItem[])
        } catch (error) {
          rethrow(error)
        }
        const done = todos.filter((item) => item.status === 'completed').length
        return `todo list updated: ${todos.length} items, ${done} completed`
      },
    })

    const exitPlanMode = defineTool<{ plan: string }>({
      name: 'exit_plan_mode',
      description: [
        'In plan mode, propose your plan (markdown: the steps and the files they change). The user accepts',
        'it, which switches plan mode off, or asks for changes. Do not change anything before it is accepted.',
      ].join(' '),
      parameters: {
        type: 'object',
        properties: { plan: { type: 'string', minLength: 1 } },
        required: ['plan'],
        additionalProperties: false,
      },
      presentation: () => ({ kind: 'generic', title: 'Propose plan' }),
      async execute(args, call) {
        const sessionId = sessionOf(call)
        try {
          ctx.workState.proposePlan(sessionId, args.plan)
        } catch (error) {
          rethrow(error)
        }
        const questions = ctx.get('userQuestions')
        const answer = questions
          ? await questions.ask(
              {
                question: `Accept this plan and leave plan mode?\n\n${args.plan}`,
                options: ['accept', 'keep planning'],
                sessionId,
                ...(call.agentId ? { agentId: call.agentId } : {}),
                toolCallId: call.callId,
              },
              call.signal,
            )
          : { status: 'unavailable' as const, reason: 'no surface can answer questions' }
        if (answer.status === 'answered' && /^\s*(accept|yes|y|ok)\b/i.test(answer.answer)) {
          ctx.workState.acceptPlan(sessionId)
          return 'The user accepted the plan; plan mode is off. Implement it now.'
        }
        if (answer.status === 'answered') {
          return `The user did not accept the plan yet: ${answer.answer}\nStay in plan mode and revise.`
        }
        return 'Plan recorded. The user has to accept it (/plan accept) before anything changes: end your turn now and wait.'
      },
    })

    const goalDone = defineTool<{ summary: string; met?: boolean }>({
      name: 'goal_done',
      description:
        'Mark the session goal as met (or, with met: false, as not achievable) with a short summary. Until then the goal keeps your turn going.',
      parameters: {
        type: 'object',
        properties: { summary: { type: 'string', minLength: 1 }, met: { type: 'boolean' } },
        required: ['summary'],
        additionalProperties: false,
      },
      presentation: () => ({ kind: 'generic', title: 'Goal done' }),
      execute(args, call) {
        try {
          const goal = ctx.workState.endGoal(
            sessionOf(call),
            args.met === false ? 'abandoned' : 'met',
            'model',
            args.summary,
          )
          return `goal ${goal.status}: ${goal.text}`
        } catch (error) {
          rethrow(error)
        }
      },
    })

    for (const tool of [todoWrite, exitPlanMode, goalDone]) ctx.tools.register(tool)
  },
}
