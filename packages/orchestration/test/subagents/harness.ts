// An in-process dsh with subagents: the real plugins under one Context, optional JSONL persistence,
// and a routed model adapter that answers each request by looking at it (parent or which child).
import {
  type AssistantMessage,
  errorFinish,
  type LlmAdapter,
  type LlmDispatch,
  llmError,
  messageToChunks,
} from '@dsh/llm'
import { startInProcess } from '@dsh/test-support/in-process'
import fork from '../../src/subagents/fork.js'
import { DEFAULT_PERSONA, type SubagentsConfig, SubagentsService } from '../../src/subagents/index.js'
import spawn from '../../src/subagents/spawn.js'
import tools from '../../src/subagents/tools.js'

export type Route = (dispatch: LlmDispatch) => AssistantMessage | Promise<AssistantMessage>

/** An adapter that computes each response (possibly waiting); an abort ends the stream `aborted`. */
export function createRoutedAdapter(route: Route): LlmAdapter & { dispatches: LlmDispatch[] } {
  const dispatches: LlmDispatch[] = []
  return {
    name: 'routed',
    dispatches,
    defaults: () => ({ model: 'scripted' }),
    async *stream(dispatch) {
      dispatches.push(dispatch)
      const signal = dispatch.request.signal
      const aborted = new Promise<undefined>((resolve) => {
        if (signal?.aborted) resolve(undefined)
        signal?.addEventListener('abort', () => resolve(undefined), { once: true })
      })
      const message = await Promise.race([Promise.resolve(route(dispatch)), aborted])
      if (!message || signal?.aborted) {
        yield errorFinish(llmError('ABORTED', 'the request was aborted'))
        return
      }
      yield* messageToChunks(message)
    },
  }
}

export interface HarnessOptions {
  route: Route
  subagents?: SubagentsConfig
  /** Persist sessions as JSONL in this directory. */
  dir?: string
}

export async function createHarness(options: HarnessOptions) {
  const adapter = createRoutedAdapter(options.route)
  const { root } = await startInProcess({
    adapter,
    ...(options.dir === undefined ? {} : { sessionsDir: options.dir }),
    before: (root) => {
      root.plugin(SubagentsService, options.subagents ?? {})
      root.plugin(spawn)
      root.plugin(fork)
      root.plugin(tools)
    },
  })
  return { root, adapter }
}

export { calls, dataOf, latch, text } from '@dsh/test-support/in-process'

/** True for a request made by a subagent (its system prompt carries the persona). */
export const isChild = (dispatch: LlmDispatch): boolean => (dispatch.request.system ?? '').includes(DEFAULT_PERSONA)

/** Every text of a request's messages, one string per message. */
export function texts(dispatch: LlmDispatch): string[] {
  return dispatch.request.messages.map((message) =>
    (message.content as Array<{ type: string; text?: string }>).map((block) => block.text ?? '').join(''),
  )
}

/** The last user/tool text of a request. */
export const lastText = (dispatch: LlmDispatch): string => texts(dispatch).at(-1) ?? ''
