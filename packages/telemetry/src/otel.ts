// The tracer, loaded only when telemetry is on. Spans are made from the session log as it is
// written: `turn/start` opens a turn span, `step/start` a step span under it, `request/header` a model
// request span under the step (closed by `assistant/message` with the GenAI usage and finish reason),
// `tool/call` a tool span under the step (closed by its `tool/result` with the outcome). Times are the
// events' own. Every span carries the session id, which links a session's turns and its subagents'.
// The exporter is OTLP/HTTP, configured by the standard OTEL_* variables; the provider is not
// registered globally (nothing else in the process is instrumented by it).
import type { Context } from '@dsh/kernel'
import type { Session, SessionEvent } from '@dsh/session'
import { type Attributes, context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'

export interface TracingOptions {
  /** Record prompts, model output, tool arguments and results (off: names, counts, outcomes). */
  content: boolean
}

interface Open {
  turn?: Span
  step?: Span
  request?: Span
  tools: Map<string, { span: Span; started: number }>
  /** User input of the current step, recorded on its model request when content is on. */
  input: unknown[]
}

const text = (value: unknown) => JSON.stringify(value)

export function startTracing(ctx: Context, options: TracingOptions): void {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'dsh' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  })
  const tracer = provider.getTracer('@dsh/telemetry')
  const open = new Map<string, Open>()

  const start = (name: string, parent: Span | undefined, time: number, attributes: Attributes, kind?: SpanKind) =>
    tracer.startSpan(
      name,
      { startTime: time, attributes, ...(kind === undefined ? {} : { kind }) },
      parent ? trace.setSpan(context.active(), parent) : context.active(),
    )

  const observe = (session: Session, event: SessionEvent) => {
    const state: Open = open.get(session.id) ?? { tools: new Map(), input: [] }
    open.set(session.id, state)
    const ids = { 'session.id': session.id, 'gen_ai.conversation.id': session.id }
    const at = event.time
    switch (event.type) {
      case 'turn/start':
        state.turn?.end(at)
        state.turn = start('invoke_agent dsh', undefined, at, {
          ...ids,
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'dsh',
          ...(session.header.parentSession ? { 'dsh.parent_session.id': session.header.parentSession } : {}),
        })
        break
      case 'step/start':
        state.step?.end(at)
        state.step = start('dsh.step', state.turn, at, { ...ids, 'dsh.step': event.data.step ?? 0 })
        break
      case 'user/message':
        if (options.content) state.input.push(event.data.message)
        break
      case 'request/header': {
        const config = event.data.config
        state.request?.end(at)
        state.request = start(
          `chat ${config.model ?? ''}`.trim(),
          state.step ?? state.turn,
          at,
          {
            ...ids,
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': config.provider ?? 'unknown',
            ...(config.model ? { 'gen_ai.request.model': config.model } : {}),
            ...(config.maxTokens ? { 'gen_ai.request.max_tokens': config.maxTokens } : {}),
            ...(config.temperature !== undefined ? { 'gen_ai.request.temperature': config.temperature } : {}),
            ...(options.content && state.input.length ? { 'gen_ai.input.messages': text(state.input) } : {}),
            ...(options.content && event.data.system ? { 'gen_ai.system_instructions': event.data.system } : {}),
          },
          SpanKind.CLIENT,
        )
        state.input = []
        break
      }
      case 'assistant/message': {
        const span = state.request
        if (!span) break
        const message = event.data.message
        span.setAttributes({
          'gen_ai.response.finish_reasons': [message.finishReason],
          ...(message.model ? { 'gen_ai.response.model': message.model } : {}),
          ...(message.usage
            ? {
                'gen_ai.usage.input_tokens': message.usage.inputTokens,
                'gen_ai.usage.output_tokens': message.usage.outputTokens,
                ...(message.usage.cacheHitTokens !== undefined
                  ? { 'gen_ai.usage.cache_read.input_tokens': message.usage.cacheHitTokens }
                  : {}),
                ...(message.usage.cacheWriteTokens !== undefined
                  ? { 'gen_ai.usage.cache_creation.input_tokens': message.usage.cacheWriteTokens }
                  : {}),
                ...(message.usage.reasoningTokens !== undefined
                  ? { 'gen_ai.usage.reasoning.output_tokens': message.usage.reasoningTokens }
                  : {}),
              }
            : {}),
          // The cost logged with the answer (absent when the model's price is unknown, never 0 for it).
          ...(typeof event.data.cost?.usd === 'number' ? { 'dsh.cost.usd': event.data.cost.usd } : {}),
          ...(options.content ? { 'gen_ai.output.messages': text([message]) } : {}),
        })
        if (message.error) {
          span.setAttribute('error.type', message.error.code)
          span.setStatus({ code: SpanStatusCode.ERROR, message: message.error.message })
        }
        span.end(at)
        state.request = undefined
        break
      }
      case 'tool/call': {
        const call = event.data.call
        const span = start(
          `execute_tool ${call.name}`,
          state.step ?? state.turn,
          at,
          {
            ...ids,
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': call.name,
            'gen_ai.tool.call.id': call.id,
            ...(options.content ? { 'gen_ai.tool.call.arguments': text(call.arguments) } : {}),
          },
          SpanKind.INTERNAL,
        )
        state.tools.set(call.id, { span, started: at })
        break
      }
      case 'tool/result': {
        const result = event.data.message
        const open = state.tools.get(result.toolCallId)
        if (!open) break
        state.tools.delete(result.toolCallId)
        open.span.setAttributes({
          'dsh.tool.outcome': result.isError ? 'error' : 'success',
          'dsh.tool.duration_ms': at - open.started,
          ...(result.isError && event.data.code ? { 'error.type': event.data.code } : {}),
          ...(options.content ? { 'gen_ai.tool.call.result': text(result.content) } : {}),
        })
        if (result.isError)
          open.span.setStatus({ code: SpanStatusCode.ERROR, ...(event.data.code ? { message: event.data.code } : {}) })
        open.span.end(at)
        break
      }
      case 'step/end':
        for (const tool of state.tools.values()) tool.span.end(at)
        state.tools.clear()
        state.request?.end(at)
        state.request = undefined
        state.step?.end(at)
        state.step = undefined
        break
      case 'turn/end':
        state.step?.end(at)
        state.step = undefined
        if (state.turn) {
          state.turn.setAttribute('dsh.turn.reason', event.data.reason)
          if (event.data.reason === 'error') {
            state.turn.setStatus({
              code: SpanStatusCode.ERROR,
              ...(event.data.message ? { message: event.data.message } : {}),
            })
          }
          state.turn.end(at)
        }
        state.turn = undefined
        break
    }
  }

  const closeAll = (at = Date.now()) => {
    for (const state of open.values()) {
      for (const tool of state.tools.values()) tool.span.end(at)
      for (const span of [state.request, state.step, state.turn]) span?.end(at)
    }
    open.clear()
  }

  ctx.sessions.watch(observe)
  ctx.on('session/closed', (session) => {
    const state = open.get(session.id)
    if (!state) return
    const at = Date.now()
    for (const tool of state.tools.values()) tool.span.end(at)
    for (const span of [state.request, state.step, state.turn]) span?.end(at)
    open.delete(session.id)
  })
  // Dispose exports what is buffered: the spans of a `dsh run` leave before the process exits.
  ctx.effect(
    () => async () => {
      closeAll()
      await provider.shutdown().catch((error: Error) => ctx.logger('telemetry').warn(`export failed: ${error.message}`))
    },
    'telemetry.tracer',
  )
}
