// An in-process dsh: the real plugins under one Context, the scripted model adapter, helpers to
// read the durable log.
import { AgentsService } from '@dsh/agent'
import { Context, InvariantsService } from '@dsh/kernel'
import { type AssistantMessage, type LlmAdapter, LlmService, type ToolCallBlock } from '@dsh/llm'
import { createScriptedAdapter, type ScriptedResponse } from '@dsh/llm/scripted'
import { eventData, type Session, type SessionEventMap, type SessionEventType, SessionService } from '@dsh/session'
import { SystemPromptService } from '@dsh/system-prompt'
import { ToolsService } from '@dsh/tools'
import AgentLoopService from '../src/index.js'

export async function createHarness(script: ScriptedResponse[] = [], extra?: { adapter?: LlmAdapter }) {
  const root = new Context()
  root.plugin(InvariantsService)
  root.plugin(SessionService, { cwd: '/work' })
  root.plugin(LlmService, { provider: 'scripted' })
  root.plugin(ToolsService)
  root.plugin(SystemPromptService)
  root.plugin(AgentsService)
  const loop = root.plugin(AgentLoopService, { model: { provider: 'scripted', model: 'scripted' } })
  await loop
  const adapter = createScriptedAdapter(script)
  root.llm.registerAdapter('scripted', extra?.adapter ?? adapter)
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

/** The event types of a log, without the per-chunk noise. */
export function types(session: Session): string[] {
  return session.events.map((event) => event.type).filter((type) => type !== 'assistant/chunk')
}

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
