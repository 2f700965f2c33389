// The `ask_user` tool: the model asks the person a question through `ctx.userQuestions`. With no
// surface to answer (headless, a subagent) the result says so, and the model decides by itself.

import { defineTool, ToolError } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import type {} from './questions.js'

export default {
  name: 'ask-user-tool',
  inject: ['userQuestions', 'tools'],
  apply(ctx: Context) {
    const tool = defineTool<{ question: string; options?: string[] }>({
      name: 'ask_user',
      description: [
        'Ask the user a question and wait for the answer. Use it only when you cannot proceed without a',
        'decision or fact that only the user has; offer options when the choices are known.',
      ].join(' '),
      parameters: {
        type: 'object',
        properties: {
          question: { type: 'string', minLength: 1 },
          options: { type: 'array', items: { type: 'string' }, description: 'Suggested answers.' },
        },
        required: ['question'],
        additionalProperties: false,
      },
      presentation: (args) => ({ kind: 'generic', title: 'Question', subtitle: args.question }),
      async execute(args, call) {
        const answer = await ctx.userQuestions.ask(
          {
            question: args.question,
            ...(args.options ? { options: [...args.options] } : {}),
            ...(call.sessionId ? { sessionId: call.sessionId } : {}),
            ...(call.agentId ? { agentId: call.agentId } : {}),
            toolCallId: call.callId,
          },
          call.signal,
        )
        if (answer.status === 'answered') return `The user answered: ${answer.answer}`
        if (answer.status === 'cancelled') {
          throw new ToolError(
            `USER_QUESTION_CANCELLED: ${answer.reason ?? 'the question was cancelled'}`,
            'USER_QUESTION_CANCELLED',
          )
        }
        throw new ToolError(
          `USER_UNAVAILABLE: ${answer.reason}. Nobody will answer; decide yourself and state the assumption you made.`,
          'USER_UNAVAILABLE',
        )
      },
    })
    ctx.tools.register(tool)
  },
}
