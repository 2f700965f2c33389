// @dsh/interaction: the human-facing seams surfaces wire. `ctx.commands` (./commands) runs slash
// commands without a model turn; `ctx.userQuestions` (./questions) carries the model's questions to a
// person. Rows: ./commands, ./builtin-commands, ./questions, ./ask-user.
export type {
  CommandContext,
  CommandInfo,
  CommandOutcome,
  CommandReturn,
  CommandSpec,
  CommandTarget,
  SubmitResult,
} from './commands.js'
export {
  CommandsService,
  commandAction,
  literalSlash,
  parseCommand,
  requireAgent,
  requireSession,
  usageError,
} from './commands.js'
export type { ModelSelected } from './model-choice.js'
export { applyModelChoice, checkModel, selectedModel, selectModel, usableModels } from './model-choice.js'
export type { AskedQuestion, QuestionAnswerer, UserAnswer, UserQuestion } from './questions.js'
export { UserQuestionsService } from './questions.js'
