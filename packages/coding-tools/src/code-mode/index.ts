// @dsh/coding-tools/code-mode: the session events of code mode. A `run_code` call's inner tool calls are logged as
// `tool/nested-call` and `tool/nested-result`: the payloads of `tool/call` and `tool/result` plus the
// parent's call id. They are not model-visible (the model reads the parent's one result), and they are
// `ignorable`, so a reader that does not know them skips them.
import type { ToolCallBlock, ToolResultMessage } from '@dsh/llm'

declare module '@dsh/session' {
  interface SessionEventMap {
    'tool/nested-call': { call: ToolCallBlock; parentCallId: string }
    'tool/nested-result': { message: ToolResultMessage; code?: string; parentCallId: string }
  }
}

export const CODE_MODE_EVENTS = ['tool/nested-call', 'tool/nested-result'] as const
