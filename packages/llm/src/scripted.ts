// The `scripted` provider: a deterministic test double. Each request takes the next entry of a script
// (an assistant message, a raw chunk list, or an error) and streams it; a request past the end gets a
// `REPLAY_EXHAUSTED` terminal chunk, never a hang.
import type { Context } from '@dsh/kernel'
import { errorFinish, type LlmAdapter, type LlmDispatch, llmError } from './adapter.js'
import { messageToChunks } from './assembler.js'
import type { AssistantMessage, LlmErrorData, StreamChunk } from './messages.js'

/** One scripted response. */
export type ScriptedResponse =
  | AssistantMessage
  | { chunks: StreamChunk[] }
  | { error: LlmErrorData }
  /** Computed per request (tests only; not expressible in YAML). */
  | ((dispatch: LlmDispatch) => AssistantMessage | { chunks: StreamChunk[] } | { error: LlmErrorData })

export interface ScriptedConfig {
  /** Provider names to serve. Default `["scripted"]`. */
  providers?: string[]
  /** Default model. Default `scripted`. */
  model?: string
  script?: ScriptedResponse[]
}

export interface ScriptedAdapter extends LlmAdapter {
  /** Every dispatch received, in order (for assertions). */
  readonly dispatches: LlmDispatch[]
  /** Appends responses to the script. */
  push(...responses: ScriptedResponse[]): void
}

function chunksOf(response: Exclude<ScriptedResponse, (dispatch: LlmDispatch) => unknown>): StreamChunk[] {
  if ('role' in response) return messageToChunks(response)
  if ('chunks' in response) return response.chunks
  return [errorFinish(response.error)]
}

/** Creates a scripted adapter (register it with `ctx.llm.registerAdapter`, or use the plugin). */
export function createScriptedAdapter(script: ScriptedResponse[] = [], model = 'scripted'): ScriptedAdapter {
  const queue = [...script]
  const dispatches: LlmDispatch[] = []
  return {
    name: 'scripted',
    dispatches,
    push: (...responses) => {
      queue.push(...responses)
    },
    defaults: () => ({ model }),
    async *stream(dispatch) {
      dispatches.push(dispatch)
      const next = queue.shift()
      if (next === undefined) {
        yield errorFinish(
          llmError(
            'REPLAY_EXHAUSTED',
            `the scripted adapter has no response left for request #${dispatches.length - 1}`,
          ),
        )
        return
      }
      for (const chunk of chunksOf(typeof next === 'function' ? next(dispatch) : next)) {
        if (dispatch.request.signal?.aborted) {
          yield errorFinish(llmError('ABORTED', 'the request was aborted'))
          return
        }
        yield chunk
        if (chunk.type === 'finish') return
      }
    },
  }
}

/** The `scripted` provider row: `use: "@dsh/llm/scripted"`. */
export default {
  name: 'llm-scripted',
  inject: ['llm'],
  apply(ctx: Context, config: ScriptedConfig = {}) {
    const adapter = createScriptedAdapter(config?.script ?? [], config?.model)
    ctx.llm.registerAdapter(config?.providers ?? ['scripted'], adapter)
  },
}
