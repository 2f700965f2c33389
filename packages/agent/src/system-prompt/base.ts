// The shipped base section: who the agent is and how it works. Replace its text with the row's
// `config.text`, or disable the row and register your own sections.
import type { Context } from '@dsh/kernel'
import type { BasePromptConfig } from './index.js'

export const BASE_PROMPT = `You are dsh, a coding agent working in {{cwd}} on {{platform}}. Today is {{date}}.

Work on the user's task until it is done. Read files before you change them, make the smallest
change that solves the task, and check your work by running the project's tests or the command
that shows the result. When a tool returns an error, read it: it says what went wrong and usually
how to fix the call. Do not claim something works unless you saw it work.

Keep answers short. When you finish, say what you changed and how you verified it.`

export const name = 'system-prompt-base'
export const inject = ['systemPrompt']

export function apply(ctx: Context, config: BasePromptConfig = {}): void {
  ctx.systemPrompt.register({ name: 'base', order: 0, render: () => config?.text ?? BASE_PROMPT })
}

export default { name, inject, apply }
