// @dsh/llm: the model seam. This file will grow the `ctx.llm` service definition; today it holds the
// shared vocabulary.
export type {
  AssistantContent,
  AssistantMessage,
  FinishReason,
  ImageBlock,
  LlmCallConfig,
  LlmErrorCode,
  LlmErrorData,
  Message,
  ReasoningBlock,
  ReasoningEffort,
  StreamChunk,
  TextBlock,
  ToolCallBlock,
  ToolResultContent,
  ToolResultMessage,
  ToolSchema,
  Usage,
  UserContent,
  UserMessage,
} from './messages.js'
