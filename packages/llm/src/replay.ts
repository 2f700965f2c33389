// The `replay` provider: plays back the assistant messages recorded in a session log, keyed by
// request order, so a recorded session reruns through the real pipeline with no key and no network.
// Source: `messages` inline, or `file`, a session JSONL log (header line, then event envelopes).
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import type {} from '@dsh/composition'
import { type Context, HarnessError } from '@dsh/kernel'
import { errorFinish, type LlmAdapter, llmError } from './adapter.js'
import { messageToChunks } from './assembler.js'
import type { AssistantMessage } from './messages.js'

export interface ReplayConfig {
  /** Provider names to serve. Default `["replay"]`. */
  providers?: string[]
  /** The recorded assistant messages, in request order. */
  messages?: AssistantMessage[]
  /** A session JSONL log; its `assistant/message` events are played back. Relative to the launcher cwd. */
  file?: string
}

function isAssistantMessage(value: unknown): value is AssistantMessage {
  const message = value as AssistantMessage | null
  return (
    typeof message === 'object' &&
    message !== null &&
    message.role === 'assistant' &&
    Array.isArray(message.content) &&
    typeof message.finishReason === 'string'
  )
}

/**
 * Extracts the assistant messages of a session JSONL log. Unknown event types are skipped; a torn
 * final line is ignored; any other unparsable line throws `REPLAY_FILE_INVALID` naming its number.
 */
export function parseSessionLog(text: string, path = '<log>'): AssistantMessage[] {
  const lines = text.split('\n')
  while (lines.length > 0 && lines.at(-1)?.trim() === '') lines.pop()
  const messages: AssistantMessage[] = []
  lines.forEach((line, index) => {
    if (line.trim() === '') return
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      if (index === lines.length - 1) return
      throw new HarnessError('REPLAY_FILE_INVALID', `${path} line ${index + 1} is not JSON`, { path, line: index + 1 })
    }
    const event = value as { type?: unknown; data?: { message?: unknown } } | null
    if (index === 0 && event?.type === 'session') return
    if (event?.type !== 'assistant/message') return
    if (!isAssistantMessage(event.data?.message)) {
      throw new HarnessError(
        'REPLAY_FILE_INVALID',
        `${path} line ${index + 1}: assistant/message without data.message`,
        {
          path,
          line: index + 1,
        },
      )
    }
    messages.push(event.data.message)
  })
  return messages
}

/** A replay adapter over `messages`; request N gets message N, later requests a terminal error. */
export function createReplayAdapter(messages: readonly AssistantMessage[]): LlmAdapter & { readonly played: number } {
  let played = 0
  return {
    name: 'replay',
    get played() {
      return played
    },
    defaults: () => ({ model: messages[0]?.model ?? 'replay' }),
    async *stream(dispatch) {
      const index = played++
      const message = messages[index]
      if (!message) {
        yield errorFinish(
          llmError(
            'REPLAY_EXHAUSTED',
            `the recording has ${messages.length} assistant message(s); request #${index} has nothing to replay`,
          ),
        )
        return
      }
      for (const chunk of messageToChunks(message)) {
        if (dispatch.request.signal?.aborted) {
          yield errorFinish(llmError('ABORTED', 'the request was aborted'))
          return
        }
        yield chunk
      }
    },
  }
}

/** The `replay` provider row: `use: "@dsh/llm/replay"` with `messages` or `file`. */
export default {
  name: 'llm-replay',
  inject: ['llm'],
  async apply(ctx: Context, config: ReplayConfig = {}) {
    let messages = config?.messages
    if (!messages && config?.file) {
      const path = resolve(ctx.get('launcher')?.config.cwd ?? process.cwd(), config.file)
      let text: string
      try {
        text = await readFile(path, 'utf8')
      } catch (error) {
        throw new HarnessError('REPLAY_FILE_INVALID', `cannot read the replay log ${path}`, {
          path,
          errno: (error as NodeJS.ErrnoException).code ?? null,
        })
      }
      messages = parseSessionLog(text, path)
    }
    if (!messages) {
      throw new HarnessError('REPLAY_FILE_INVALID', 'the replay row needs `messages` or `file` in its config', {})
    }
    ctx.llm.registerAdapter(config?.providers ?? ['replay'], createReplayAdapter(messages))
  },
}
