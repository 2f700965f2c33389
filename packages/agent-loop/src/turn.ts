// One turn of the default loop, top to bottom. Every durable fact is appended to the session log
// before anything acts on it, and every exit path appends `turn/end` with a reason.
//
//   turn/start
//   loop:
//     claim input (all next-step items; on the first step also one next-turn item)
//     agent/pre-step waterfall -> reject (closes the turn, stepless if first) | enter(messages)
//     checkpoint(pre-step); step/start; dynamic context snapshot; user/message per entered message
//     request: render prompt + tools, agent/request waterfall, prepareCall, request/header (prompt and
//              tools by content hash, bodies logged once),
//              request/context, derive messages from the log, checkpoint(model-dispatch)
//     stream: llm/stream -> assistant/chunk* -> assistant/message
//             failed/aborted -> agent/request-error waterfall -> retry (new request/header) | end
//     tools: tool/call* -> scheduler (checkpoint(tool-body) per top-level body) -> tool/result* in order
//     step/end
//     another step when tools owe a request or next-step input arrived
//   agent/turn-stopping (serial; may queue one more message and keep the turn going)
//   agent/turn-closing (serial, every exit path; facts that belong to the turn, e.g. the checkpoint)
//   turn/end { reason }; checkpoint(turn-end)

import type { PreStepDecision, RequestDraft, RequestErrorDecision, TurnContinuation } from '@dsh/agent'
// Type-only imports with no names: they load the `declare module` augmentations that type
// `ctx.systemPrompt` and `ctx.get('attachments')` here, without a runtime dependency.
import type {} from '@dsh/agent/system-prompt'
import type {} from '@dsh/attachments'
import {
  type AssistantMessage,
  type LlmErrorData,
  type Message,
  MessageAssembler,
  type ModelPrices,
  requestCost,
  type StreamChunk,
  type ToolCallBlock,
  type UserMessage,
} from '@dsh/llm'
import { repairEvents, sessionUsage, type TurnEndReason, usageCostText } from '@dsh/session'
import type { TurnDeps } from './driver.js'
import { turnServices } from './services.js'
import { runToolCalls } from './tool-step.js'

const APPEND = { op: 'append' } as const

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function isAbort(signal: AbortSignal, error?: unknown): boolean {
  return signal.aborted || (error instanceof Error && error.name === 'AbortError')
}

/** Runs one turn. Never throws for model, tool or plugin failures: they end the turn with a reason. */
export async function runTurn(deps: TurnDeps, signal: AbortSignal): Promise<void> {
  const { agent, root } = deps
  const services = turnServices(root)
  const session = agent.session
  session.append('turn/start', {})
  let reason: TurnEndReason = 'completed'
  let message: string | undefined
  let stepOpen = false
  let steps = 0
  let maxTokens = false

  try {
    for (;;) {
      if (signal.aborted) {
        reason = 'aborted'
        break
      }
      // -- a cost budget pauses the turn before its next model request; queued input stays queued
      if (deps.maxCost !== undefined) {
        const spent = sessionUsage(session.events, session.header.seedLength ?? 0)
        if (spent.usd >= deps.maxCost) {
          reason = 'blocked'
          message = `the session reached its cost budget: ${usageCostText(spent)} spent of $${deps.maxCost} (raise --max-cost or the budget.session setting to go on)`
          agent.holdQueued()
          break
        }
      }
      const overDay = await deps.dailyRefusal?.(session)
      if (overDay) {
        reason = 'blocked'
        message = overDay
        agent.holdQueued()
        break
      }
      // -- claim input and run the pre-step waterfall
      const first = steps === 0
      const items = agent.claim(first)
      const claimed = items.map((item) => item.message)
      const decision: PreStepDecision = await services.events.waterfall(
        'agent/pre-step',
        { agent, session, messages: claimed, items, first, step: steps },
        async () => ({ action: 'enter', messages: claimed }),
      )
      if (decision.action === 'reject') {
        reason = 'blocked'
        message = decision.reason
        break
      }
      if (first && decision.messages.length === 0) {
        reason = 'blocked'
        message = 'the first step of the turn had no input after agent/pre-step'
        break
      }
      if (steps >= deps.maxSteps) {
        reason = 'blocked'
        message = `the turn reached its step limit (${deps.maxSteps})`
        break
      }
      await services.sessions().checkpoint(session, 'pre-step')

      // -- open the step: the entered messages become model-visible facts
      session.append('step/start', { step: steps })
      stepOpen = true
      steps++
      const scope = {
        cwd: session.header.cwd,
        sessionId: session.id,
        agentId: agent.id,
        provider: agent.model.provider,
        model: agent.model.model,
      }
      const prompt = await services.systemPrompt().render(scope)
      if (prompt.dynamic && prompt.dynamic !== agent.lastDynamic) {
        const context: UserMessage = { role: 'user', content: [{ type: 'text', text: prompt.dynamic }] }
        session.append('user/message', { message: context, origin: 'context' }, { surfaceOp: APPEND })
        agent.lastDynamic = prompt.dynamic
      }
      for (const entered of decision.messages)
        session.append('user/message', { message: entered }, { surfaceOp: APPEND })

      // -- request, stream, and the recovery waterfall
      const assistant = await requestAndStream(deps, prompt.system, signal)
      if (assistant.finishReason === 'error' || assistant.finishReason === 'aborted') {
        reason = assistant.finishReason === 'aborted' || signal.aborted ? 'aborted' : 'error'
        message = assistant.error?.message
        break
      }
      if (assistant.finishReason === 'max-tokens') maxTokens = true

      // -- tools: calls logged first, results committed in the model's order
      const calls = assistant.content.filter((block): block is ToolCallBlock => block.type === 'tool-call')
      if (calls.length > 0) {
        await runToolCalls(deps, calls, signal)
      }
      session.append('step/end', {})
      stepOpen = false
      if (signal.aborted) {
        reason = 'aborted'
        break
      }
      if (maxTokens) break // sticky: the turn ends max-tokens once a response was cut off
      if (calls.length > 0 || agent.hasStepInput()) continue

      // -- the one place that may keep a finished turn going
      const continuation = (await services.events.serial('agent/turn-stopping', {
        agent,
        session,
        reason,
        steps,
      })) as TurnContinuation | undefined
      if (continuation?.continue) {
        agent.splice({
          target: 'next-step',
          start: agent.queues['next-step'].length,
          deleteCount: 0,
          items: [
            { id: `continuation-${session.length}`, kind: 'continuation', message: continuation.message, wake: true },
          ],
          reason: 'queued',
        })
        continue
      }
      break
    }
  } catch (error) {
    if (isAbort(signal, error)) reason = 'aborted'
    else {
      reason = 'error'
      message = errorText(error)
      root.logger('agent-loop').warn(error)
    }
  } finally {
    closeOpenCalls(deps)
    if (stepOpen) session.append('step/end', {})
    if (maxTokens && reason === 'completed') reason = 'max-tokens'
    try {
      await services.events.serial('agent/turn-closing', { agent, session, reason })
    } catch (error) {
      root.logger('agent-loop').warn('an agent/turn-closing listener failed: %s', errorText(error))
    }
    session.append('turn/end', message === undefined ? { reason } : { reason, message })
    // The turn's facts durable (a sync: the steps before it may only have been written).
    await services
      .sessions()
      .checkpoint(session, 'turn-end')
      .catch((error: unknown) => root.logger('agent-loop').warn('turn-end checkpoint failed: %s', errorText(error)))
  }
}

/** Builds the request from the log, streams it, and asks `agent/request-error` on failure. */
async function requestAndStream(deps: TurnDeps, baseSystem: string, signal: AbortSignal): Promise<AssistantMessage> {
  const { agent, root } = deps
  const services = turnServices(root)
  const session = agent.session
  let retryReason: string | undefined
  for (let attempt = 0; ; attempt++) {
    const tools = services.tools().list({ agentId: agent.id, restrictions: agent.toolRestrictions })
    const draft: RequestDraft = await services.events.waterfall(
      'agent/request',
      { agent, session, config: { ...agent.model }, system: baseSystem, tools, signal },
      async () => ({ agent, session, config: { ...agent.model }, system: baseSystem, tools, signal }),
    )
    // Adapters that load their catalog on first use (pi-ai, endpoint model lists) know defaults and windows after this.
    await services.llm().ready(draft.config.provider)
    const prepared = services.llm().prepareCall(draft.config)
    // The system prompt and tools are logged by content: in full the first time, by hash after.
    const header = session.append(
      'request/header',
      session.requestHeader({
        config: prepared.config,
        system: draft.system,
        tools: draft.tools,
        ...(attempt > 0 ? { reason: `retry ${attempt}${retryReason ? ` (${retryReason})` : ''}` } : {}),
      }),
    )
    const catalog = services.llm().catalog(prepared.config.provider)[0]
    const modelInfo = catalog?.models.find((model) => model.id === prepared.config.model)
    const contextWindow = modelInfo?.contextWindow
    const prices: ModelPrices | undefined = services.llm().prices(prepared.config.provider, prepared.config.model)
    session.append('request/context', contextWindow === undefined ? {} : { contextWindow })
    const messages = Object.freeze(session.deriveMessages()) as readonly Message[]
    agent.lastRequest = { headerSeq: header.seq, system: draft.system, tools: draft.tools, messages }
    await services
      .sessions()
      .checkpoint(session, 'model-dispatch', `${prepared.config.provider}:${prepared.config.model}`)
    services.events.emit('agent/request-sent', {
      agent,
      session,
      headerSeq: header.seq,
      system: draft.system,
      tools: draft.tools,
      messages,
    })

    const chunkSeqs: number[] = []
    const assembler = new MessageAssembler()
    // Images travel by reference in the log; the adapter loads their bytes from the attachment store.
    const attachments = root.get('attachments')
    const stream: AsyncIterable<StreamChunk> = services.llm().stream(prepared, {
      system: draft.system,
      messages,
      tools: draft.tools,
      signal,
      ...(attachments ? { loadImage: (ref: string) => attachments.get(ref) } : {}),
    })
    for await (const chunk of stream) {
      chunkSeqs.push(session.append('assistant/chunk', { chunk }).seq)
      assembler.push(chunk)
    }
    const assistant: AssistantMessage = assembler.finish()
    const failed = assistant.finishReason === 'error' || assistant.finishReason === 'aborted'
    if (failed && !signal.aborted) {
      const error: LlmErrorData = assistant.error ?? { code: 'UNKNOWN', message: 'the model request failed' }
      const decision: RequestErrorDecision = await services.events.waterfall(
        'agent/request-error',
        { agent, session, error, attempt, partial: assistant, signal },
        async () => ({ retry: false }),
      )
      if (decision.retry && !signal.aborted) {
        retryReason = decision.reason ?? error.code
        continue
      }
    }
    // The cost travels with the response, so a session's cost is a fold of its own log.
    const data = assistant.usage
      ? { message: assistant, cost: requestCost(assistant.usage, prices) }
      : { message: assistant }
    session.append('assistant/message', data, { surfaceOp: APPEND, sourceEventSeqs: chunkSeqs })
    return assistant
  }
}

/**
 * After a failure inside the tool step, a call may have no result. The log must never hold such a
 * call: close it with the same synthetic results cold resume uses (TOOL_NOT_STARTED when no
 * `tool/call` was logged, TOOL_OUTCOME_UNKNOWN when it was); the turn's own end follows.
 */
function closeOpenCalls(deps: TurnDeps): void {
  const session = deps.agent.session
  for (const item of repairEvents(session.openTail())) {
    if (item.type === 'tool/result') session.append(item.type, item.data, item.options)
  }
}
