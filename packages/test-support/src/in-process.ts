// `@dsh/test-support/in-process`: a whole dsh in the test's process. The runtime rows of the base
// bundle (sessions, model, tools, approval, system prompt, agents, the agent loop) under one Context,
// a mock model (the scripted adapter, or any adapter the test gives), optional JSONL persistence, and
// the small builders the tests share. Package tests mount their own rows through `before`.
import { AgentsService } from '@dsh/agent'
import { ApprovalService } from '@dsh/agent/approval'
import { SystemPromptService } from '@dsh/agent/system-prompt'
import { ToolsService } from '@dsh/agent/tools'
import AgentLoopService from '@dsh/agent-loop'
import { Context, InvariantsService } from '@dsh/kernel'
import { type AssistantMessage, type LlmAdapter, LlmService, type ToolCallBlock } from '@dsh/llm'
import { createScriptedAdapter, type ScriptedAdapter, type ScriptedResponse } from '@dsh/llm/scripted'
import { eventData, type Session, type SessionEventMap, type SessionEventType, SessionService } from '@dsh/session'
import SessionPersistence from '@dsh/session/store/coordinator'
import JsonlSessionStore from '@dsh/session/store/jsonl'

export interface InProcessOptions {
  /** The scripted model's answers, in order (used when `adapter` is not given). */
  script?: ScriptedResponse[]
  /** A model adapter of the test's own, routed as `provider`; `false` routes none (a row of the test does). */
  adapter?: LlmAdapter | false
  /** Provider name of the model route. Default `scripted`. */
  provider?: string
  /** Model of the agent loop's default route. Default `scripted`. */
  model?: string
  /** Default cwd of new sessions. Default `/work`. */
  cwd?: string
  /** Steps per turn before the turn ends `blocked` (the loop's default when unset). */
  maxSteps?: number
  /** Sessions persisted as JSONL files in this directory (the store and the persistence coordinator). */
  sessionsDir?: string
  /** Mount `ctx.approval`. Default true. */
  approval?: boolean
  /** Mount the invariants row (model-visible-means-logged is checked). Default true. */
  invariants?: boolean
  /** Rows of the package under test, mounted after the runtime rows and before the agent loop. */
  before?: (root: Context) => unknown
  /** Rows mounted last, once the agent loop is active and the model routed. */
  after?: (root: Context) => unknown
}

export interface InProcessDsh {
  root: Context
  /** The scripted adapter: the routed model unless the test gave its own `adapter` (or `false`). */
  adapter: ScriptedAdapter
}

/** Boots the tree and resolves once the agent loop is active and the model is routed. */
export async function startInProcess(options: InProcessOptions = {}): Promise<InProcessDsh> {
  const provider = options.provider ?? 'scripted'
  const root = new Context()
  if (options.invariants !== false) root.plugin(InvariantsService)
  root.plugin(SessionService, { cwd: options.cwd ?? '/work' })
  if (options.sessionsDir !== undefined) {
    root.plugin(JsonlSessionStore, { dir: options.sessionsDir })
    root.plugin(SessionPersistence)
  }
  root.plugin(LlmService, { provider })
  root.plugin(ToolsService)
  if (options.approval !== false) root.plugin(ApprovalService)
  root.plugin(SystemPromptService)
  root.plugin(AgentsService)
  await options.before?.(root)
  await root.plugin(AgentLoopService, {
    model: { provider, model: options.model ?? 'scripted' },
    ...(options.maxSteps === undefined ? {} : { maxSteps: options.maxSteps }),
  })
  const adapter = createScriptedAdapter(options.script ?? [])
  if (options.adapter !== false) root.llm.registerAdapter(provider, options.adapter ?? adapter)
  await options.after?.(root)
  return { root, adapter }
}

/** An assistant message that only says `value`. */
export const text = (value: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text: value }],
  finishReason: 'stop',
})

/** An assistant message that calls tools: `[id, name, args]` each. */
export const calls = (
  ...blocks: Array<[id: string, name: string, args: Record<string, unknown>]>
): AssistantMessage => ({
  role: 'assistant',
  content: blocks.map(([id, name, args]): ToolCallBlock => ({ type: 'tool-call', id, name, arguments: args })),
  finishReason: 'tool-calls',
})

/** The payloads of every `type` event of the session, typed by the declared map. */
export function dataOf<T extends SessionEventType>(session: Session, type: T): SessionEventMap[T][] {
  return eventData(session.events, type)
}

/** The event types of a log, without the per-chunk noise. */
export function types(session: Session): string[] {
  return session.events.map((event) => event.type).filter((type) => type !== 'assistant/chunk')
}

/** A promise with its resolver, for latches in tests. */
export function latch<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((done) => {
    resolve = done
  })
  return { promise, resolve }
}

/** Polls until `check` returns a truthy value (or throws after `ms`). */
export async function until<T>(check: () => T | undefined | false, ms = 30_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = check()
    if (value) return value
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
