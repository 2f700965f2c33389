// An in-process dsh with subagents: the real plugins under one Context, optional JSONL persistence,
// and a routed model adapter that answers each request by looking at it (parent or which child).
import { AgentsService } from '@dsh/agent'
import AgentLoopService from '@dsh/agent-loop'
import { ApprovalService } from '@dsh/approval'
import { Context, InvariantsService } from '@dsh/kernel'
import {
  type AssistantMessage,
  errorFinish,
  type LlmAdapter,
  type LlmDispatch,
  LlmService,
  llmError,
  messageToChunks,
  type ToolCallBlock,
} from '@dsh/llm'
import { eventData, type Session, type SessionEventMap, type SessionEventType, SessionService } from '@dsh/session'
import SessionPersistence from '@dsh/session-store/coordinator'
import JsonlSessionStore from '@dsh/session-store/jsonl'
import { SystemPromptService } from '@dsh/system-prompt'
import { ToolsService } from '@dsh/tools'
import fork from '../src/fork.js'
import { DEFAULT_PERSONA, type SubagentsConfig, SubagentsService } from '../src/index.js'
import spawn from '../src/spawn.js'
import tools from '../src/tools.js'

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
  const root = new Context()
  root.plugin(InvariantsService)
  root.plugin(SessionService, { cwd: '/work' })
  if (options.dir) {
    root.plugin(JsonlSessionStore, { dir: options.dir })
    root.plugin(SessionPersistence)
  }
  root.plugin(LlmService, { provider: 'scripted' })
  root.plugin(ApprovalService)
  root.plugin(ToolsService)
  root.plugin(SystemPromptService)
  root.plugin(AgentsService)
  root.plugin(SubagentsService, options.subagents ?? {})
  root.plugin(spawn)
  root.plugin(fork)
  root.plugin(tools)
  await root.plugin(AgentLoopService, { model: { provider: 'scripted', model: 'scripted' } })
  const adapter = createRoutedAdapter(options.route)
  root.llm.registerAdapter('scripted', adapter)
  return { root, adapter }
}

export const text = (value: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text: value }],
  finishReason: 'stop',
})

export const calls = (
  ...blocks: Array<[id: string, name: string, args: Record<string, unknown>]>
): AssistantMessage => ({
  role: 'assistant',
  content: blocks.map(([id, name, args]): ToolCallBlock => ({ type: 'tool-call', id, name, arguments: args })),
  finishReason: 'tool-calls',
})

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

/** The payloads of every `type` event of the session, typed by the declared map. */
export function dataOf<T extends SessionEventType>(session: Session, type: T): SessionEventMap[T][] {
  return eventData(session.events, type)
}

/** A promise with its resolver, for latches in tests. */
export function latch<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((done) => {
    resolve = done
  })
  return { promise, resolve }
}
