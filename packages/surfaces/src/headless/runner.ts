// The headless runner row: one task, one agent, to whole-agent idle, then flush and report.
import type { Agent } from '@dsh/agent'
import type {} from '@dsh/agent/approval'
import { createStaticAnswerer } from '@dsh/agent/approval'
import { type Context, HarnessError } from '@dsh/kernel'
import type { AssistantMessage, Usage } from '@dsh/llm'
import { type SessionEvent, sessionUsage, type TurnEndReason, usageCostText } from '@dsh/session'
import { SessionHost } from '../host/index.js'
import { removeSessions } from '../host/remove.js'
import { HeadlessRunner, type HeadlessRunRequest, type HeadlessRunResult, type RefusedCall } from './index.js'

const NOBODY_TO_ASK =
  'this is a headless run: nobody can approve actions; rerun with --yes to allow such actions once each, or change --permission-mode'

function addUsage(total: Usage, usage: Usage | undefined): void {
  if (!usage) return
  total.inputTokens += usage.inputTokens
  total.outputTokens += usage.outputTokens
  total.totalTokens += usage.totalTokens
  if (usage.cacheHitTokens !== undefined) total.cacheHitTokens = (total.cacheHitTokens ?? 0) + usage.cacheHitTokens
  if (usage.cacheMissTokens !== undefined) total.cacheMissTokens = (total.cacheMissTokens ?? 0) + usage.cacheMissTokens
}

export class HeadlessRunnerService extends HeadlessRunner {
  static readonly provide = 'headless'
  static readonly inject = ['agents', 'sessions']

  constructor(ctx: Context) {
    super(ctx, 'headless')
  }

  /** A fresh session, or the one `--resume` / `--continue` names, with the run's agent attached. */
  private async attach(host: SessionHost, request: HeadlessRunRequest): Promise<Agent> {
    const options = {
      model: request.model,
      maxSteps: request.maxSteps,
      ...(request.maxCost !== undefined ? { maxCost: request.maxCost } : {}),
      ...(request.preset !== undefined ? { preset: request.preset } : {}),
    }
    if (!request.resume && !request.continue) return host.create({ ...options, cwd: request.cwd })
    if (!host.persistent) {
      throw new HarnessError(
        'CONFIG_NO_PERSISTENCE',
        'resuming needs a session persistence row (session-persistence) in the profile; it is disabled',
        {},
      )
    }
    let id = request.resume
    if (!id) {
      const latest = await host.latest(request.cwd)
      if (!latest) {
        throw new HarnessError(
          'SESSION_NOT_FOUND',
          `no session to continue in ${request.cwd}; start one with dsh run "<task>"`,
          { cwd: request.cwd },
        )
      }
      id = latest.sessionId
    }
    return host.resume(id, options)
  }

  async run(request: HeadlessRunRequest): Promise<HeadlessRunResult> {
    // Nobody is there to answer (unless `ask`): approvals get a static answer, `ask_user` stays unanswered.
    const host = new SessionHost(this.ctx, {
      name: 'this headless run',
      closeReason: 'the run ended',
      cwd: request.cwd,
      // --yes answers every approval; otherwise someone attached answers them (`ask`), or nobody can.
      answerApprovals: request.yes
        ? createStaticAnswerer('allowed-once')
        : request.ask
          ? true
          : createStaticAnswerer('unavailable', NOBODY_TO_ASK),
      ...(request.ask ? { on: request.ask.listeners } : { answerQuestions: false }),
    })
    let agent: Agent
    try {
      agent = await this.attach(host, request)
    } catch (error) {
      await host.close()
      throw error
    }
    const sessionId = agent.session.id
    const start = agent.session.length
    request.onSession?.(sessionId)
    if (request.ask?.onHost) {
      try {
        await request.ask.onHost(host, sessionId)
      } catch (error) {
        await host.close()
        throw error
      }
    }
    const disposers: Array<() => unknown> = []
    const fresh = !request.resume && !request.continue
    let result: HeadlessRunResult
    let discard = false
    try {
      let turns = 0
      // A new session's first facts (its preset, its permission mode) were logged while it was created:
      // they are part of the run's stream too. A resumed session's repair is not: it is already durable.
      const subscription = await host.subscribe(sessionId, fresh ? 0 : start, (event) => {
        request.onEvent?.(event)
        if (event.type === 'turn/end' && ++turns >= (request.maxTurns ?? Number.POSITIVE_INFINITY)) {
          void agent.cancel('the run reached its turn limit')
        }
      })
      disposers.push(() => subscription.dispose())
      for (const event of subscription.events) request.onEvent?.(event)
      const mode = host.modeOf(sessionId)
      if (mode !== undefined && (request.permissionMode || request.network)) {
        // The chosen mode is a durable fact of the session (`sandbox/mode`), and binds the approval policy.
        host.setMode(sessionId, request.permissionMode ?? mode, request.network ? { network: request.network } : {})
      }
      const onAbort = () => void agent.cancel('interrupted')
      request.signal?.addEventListener('abort', onAbort)
      disposers.push(() => request.signal?.removeEventListener('abort', onAbort))
      // A human /command (`dsh run --resume <id> /compact`) runs through ctx.commands, without a turn.
      if (host.isCommand(request.task)) {
        const outcome = await host.command(sessionId, request.task, request.signal)
        const durable = await host.flush(sessionId)
        const result = summarize(sessionId, agent.session.events.slice(start) as SessionEvent[], 0, durable)
        return outcome.ok
          ? { ...result, reason: 'completed', text: outcome.text }
          : { ...result, reason: 'error', text: '', message: outcome.text }
      }
      if (!request.signal?.aborted) {
        const attachments = (request.attachments ?? []).map((path) => ({ path }))
        await host.prompt(sessionId, { text: host.typedText(request.task), attachments })
      }
      await agent.whenIdle()
      const durable = await host.flush(sessionId)
      const events = agent.session.events.slice(start) as SessionEvent[]
      result = summarize(sessionId, events, turns, durable)
      discard = fresh && durable && result.reason === 'error' && !reachedModel(events)
    } finally {
      for (const dispose of disposers.reverse()) dispose()
      await host.close()
    }
    if (discard) {
      // Nothing a model said is in it: the session would only be clutter in `dsh sessions`.
      await removeSessions(this.ctx, [sessionId])
      result.discarded = true
    }
    return result
  }
}

/** Failures of the setup, before any model could answer: no key, no adapter, a refused model, no route. */
const SETUP_FAILURES = new Set(['AUTH', 'NO_ADAPTER', 'NETWORK', 'INSUFFICIENT_BALANCE', 'BAD_REQUEST'])

/**
 * Whether a model answered in these events: an assistant message with content, one that did not
 * fail, or one that failed for another reason than the setup (a server error reached the provider).
 */
function reachedModel(events: SessionEvent[]): boolean {
  return events.some((event) => {
    if (event.type !== 'assistant/message') return false
    const message = event.data.message
    return (
      message.content.length > 0 || message.finishReason !== 'error' || !SETUP_FAILURES.has(message.error?.code ?? '')
    )
  })
}

/** The outcome of a run, read from the events it committed. */
export function summarize(
  sessionId: string,
  events: SessionEvent[],
  turns: number,
  durable: boolean,
): HeadlessRunResult {
  const usage: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 }
  let reason: TurnEndReason = 'aborted'
  let message: string | undefined
  let last: AssistantMessage | undefined
  let text = ''
  const asked = new Map<string, RefusedCall>()
  const refused: RefusedCall[] = []
  for (const event of events) {
    if (event.type === 'approval/asked') {
      const question = event.data
      asked.set(question.requestId, {
        ...(question.toolName ? { tool: question.toolName } : {}),
        summary: question.summary,
        ...(question.reason ? { reason: question.reason } : {}),
        ...(question.suggestedRule ? { rule: question.suggestedRule } : {}),
      })
    } else if (event.type === 'approval/decided' && event.data.decision === 'unavailable') {
      const call = asked.get(event.data.requestId)
      refused.push(call ?? { ...(event.data.toolName ? { tool: event.data.toolName } : {}), summary: '(unknown)' })
    } else if (event.type === 'assistant/message') {
      last = event.data.message
      addUsage(usage, last.usage)
      const said = last.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')
      if (said.trim()) text = said
    } else if (event.type === 'turn/end') {
      reason = event.data.reason
      message = event.data.message
    }
  }
  const spent = sessionUsage(events)
  const cost =
    spent.requests > spent.unknownRequests
      ? { usd: spent.usd, text: usageCostText(spent) }
      : { text: usageCostText(spent) }
  const result: HeadlessRunResult = { sessionId, reason, text, usage, cost, turns, durable, refused }
  if (message !== undefined) result.message = message
  if (reason === 'error' && last?.error) result.error = last.error
  return result
}

export default HeadlessRunnerService
