// The agent loop under test: the in-process dsh of @dsh/test-support, without the approval row.
import type { LlmAdapter } from '@dsh/llm'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import { startInProcess } from '@dsh/test-support/in-process'

export { calls, dataOf, latch, text, types } from '@dsh/test-support/in-process'

export function createHarness(script: ScriptedResponse[] = [], extra: { adapter?: LlmAdapter } = {}) {
  return startInProcess({ script, approval: false, ...extra })
}
