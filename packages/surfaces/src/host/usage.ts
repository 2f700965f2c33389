// What a session has used and where it stands, for wires that do not fold the log themselves (RPC, the
// SDKs, ACP's usage_update) and for the user's status line on the web page: the session's usage and
// cost folded from its log, the token meter's reading of the next request, and the status line
// command's first line with the facts a footer shows.
import type { Agent } from '@dsh/agent'
import type {} from '@dsh/context'
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/llm'
import { type Session, type SessionUsage, sessionUsage } from '@dsh/session'
import type { StatusFacts, StatusLineState } from '../statusline/index.js'
import { gitBranch } from './git.js'

/** How full the next request's context is (the token meter's reading). */
export type ContextUse = {
  tokens: number
  window?: number
  /** `tokens / window`. */
  pressure?: number
}

/** A session's usage and cost (folded from its log) and its context use. */
export type SessionUsageView = SessionUsage & {
  sessionId: string
  /** Absent when no token meter row is loaded or the model is not resolved yet. */
  context?: ContextUse
}

/** The token meter's reading of `session`'s next request, when a meter is loaded and can read it. */
export function contextUse(ctx: Context, session: Session): ContextUse | undefined {
  const meter = ctx.get('tokenMeter')
  if (!meter) return undefined
  try {
    const reading = meter.measure(session)
    return {
      tokens: reading.tokens,
      ...(reading.window !== undefined ? { window: reading.window } : {}),
      ...(reading.pressure !== undefined ? { pressure: reading.pressure } : {}),
    }
  } catch {
    // No model resolved yet: no reading rather than a failure.
    return undefined
  }
}

export function usageView(ctx: Context, session: Session): SessionUsageView {
  const usage = sessionUsage(session.events, session.header.seedLength ?? 0)
  const context = contextUse(ctx, session)
  return { sessionId: session.id, ...usage, ...(context ? { context } : {}) }
}

/** `provider:model` the agent's next request goes to, as a request resolves it. */
export function nextModel(ctx: Context, agent: Agent): string {
  try {
    const resolved = ctx.get('llm')?.resolveCall({ ...agent.model })
    if (resolved?.model) return `${resolved.provider}:${resolved.model}`
  } catch {
    // An unresolvable setting: say what the agent names.
  }
  const model = agent.model.model ?? 'default model'
  return agent.model.provider ? `${agent.model.provider}:${model}` : model
}

/**
 * The user's status line for an attached session (`statusline.command`), with the facts a footer
 * shows. `configured: false` when no command is set (or no status line row is loaded).
 */
export async function statusLineOf(
  ctx: Context,
  agent: Agent,
  facts: { preset?: string; mode?: string },
): Promise<StatusLineState & { configured: boolean }> {
  const service = ctx.get('statusLine')
  if (!service?.command()) return { configured: false }
  const context = contextUse(ctx, agent.session)
  const branch = gitBranch(agent.session.header.cwd)
  const input: StatusFacts = {
    model: nextModel(ctx, agent),
    ...(facts.preset ? { preset: facts.preset } : {}),
    ...(facts.mode ? { mode: facts.mode } : {}),
    ...(branch ? { gitBranch: branch } : {}),
    ...(context ? { tokens: context.tokens } : {}),
    ...(context?.window !== undefined ? { window: context.window } : {}),
    ...(context?.pressure !== undefined ? { pressure: context.pressure } : {}),
  }
  return { configured: true, ...(await service.refresh(agent, input)) }
}
