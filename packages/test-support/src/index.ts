// @dsh/test-support: fixtures shared by dsh tests. The mock Chat Completions server and the builders
// of DeepSeek-shaped SSE transcripts.
export type { AnthropicScript } from './anthropic-wire.js'
export { anthropicEvent, anthropicResponse } from './anthropic-wire.js'
export type { CompletionScript, ScriptedToolCall } from './deepseek-wire.js'
export {
  chunkEvent,
  completionResponse,
  completionSteps,
  deepseekUsage,
  errorResponse,
  usageEvent,
} from './deepseek-wire.js'
export { fileTree } from './files.js'
export type { MockLlmServerOptions, MockResponse, RecordedRequest, SseStep } from './mock-llm-server.js'
export { MockLlmServer, startMockLlmServer } from './mock-llm-server.js'
export { type ChildExit, collectExit, isAlive, type WatchedChild, watchOutput } from './process.js'
export { startSshd, type TestSshd } from './sshd.js'
