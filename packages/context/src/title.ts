// Row `session-title`, module `@dsh/context/title`: when a root session's first turn completes,
// the configured model names it in a few words, and the name is logged as `session/title` (ignorable,
// so a dsh without this row still reads the session). Session lists show it instead of the first
// prompt. The call runs in `agent/turn-stopping`, inside the turn, so even a one-shot `dsh run` logs
// it before the session closes; a failure or timeout only means no title. On or off is the
// `session.titles` setting (`dsh config set session.titles on`, $DSH_SESSION_TITLES), read at each turn.
import type {} from '@dsh/agent'
import type { Context } from '@dsh/kernel'
import { type LlmCallConfig, MessageAssembler, type RequestCost, requestCost, type Usage } from '@dsh/llm'
import { isEvent, type Session } from '@dsh/session'
import type {} from '@dsh/settings'

export const name = 'session-title'
export const inject = ['sessions', 'llm', 'agents']

export interface SessionTitleConfig {
  /** The default of the `session.titles` setting: `off` (or false) turns titles off; default on. */
  enabled?: boolean | string
  /** Bound on the title request (default 15 s). */
  timeoutMs?: number
}

export interface SessionTitle {
  title: string
  /** The model that wrote it (absent when a person named the session). */
  provider?: string
  model?: string
  /** `user`: a person renamed the session (the web page); a model-written title has no `by`. */
  by?: 'user'
  /** What the title request used and cost (as `assistant/message` logs it), counted by `/cost`. */
  usage?: Usage
  cost?: RequestCost
}

declare module '@dsh/settings' {
  interface SettingsMap {
    /** Model-written session titles (one small extra request per session). */
    'session.titles': boolean | 'on' | 'off'
  }
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A short name for the session: the model's after the first completed turn, or a person's rename. */
    'session/title': SessionTitle
  }
}

const MAX_TITLE = 60
const INSTRUCTIONS =
  'You name conversations. Reply with a title of at most six words for the conversation below: no quotes, no final period, nothing else.'

const off = (value: SessionTitleConfig['enabled']) => value === false || value === 'off' || value === 'false'

function excerpt(session: Session): string | undefined {
  const parts: string[] = []
  for (const event of session.events) {
    if (isEvent(event, 'user/message') && !event.data.origin) {
      const text = event.data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n')
      parts.push(`User: ${text.slice(0, 2000)}`)
    } else if (isEvent(event, 'assistant/message')) {
      const text = event.data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')
      if (text) parts.push(`Assistant: ${text.slice(0, 1000)}`)
    }
  }
  return parts.length > 0 ? parts.join('\n\n') : undefined
}

/** The model's answer as a one-line title, or undefined when it gave nothing usable. */
export function cleanTitle(raw: string): string | undefined {
  const line = raw
    .split('\n')
    .map((text) => text.trim())
    .find(Boolean)
  const title = line?.replace(/^(title:\s*)/i, '').replace(/^["'`*#\s]+|["'`*.\s]+$/g, '')
  if (!title) return undefined
  return title.length > MAX_TITLE ? `${title.slice(0, MAX_TITLE - 1)}…` : title
}

async function generate(ctx: Context, model: Partial<LlmCallConfig>, text: string, timeoutMs: number) {
  const prepared = ctx.llm.prepareCall({ ...model, maxTokens: 32 })
  const assembler = new MessageAssembler()
  for await (const chunk of ctx.llm.stream(prepared, {
    system: INSTRUCTIONS,
    messages: [{ role: 'user', content: [{ type: 'text', text }] }],
    signal: AbortSignal.timeout(timeoutMs),
  })) {
    assembler.push(chunk)
  }
  const answer = assembler.finish()
  if (answer.finishReason === 'error' || answer.finishReason === 'aborted') return undefined
  const title = cleanTitle(
    answer.content
      .filter((block) => block.type === 'text')
      .map((block) => block.text)
      .join(''),
  )
  const { provider, model: id } = prepared.config
  const spend = answer.usage
    ? { usage: answer.usage, cost: requestCost(answer.usage, ctx.llm.prices(provider, id)) }
    : {}
  return title && { title, provider, model: id, ...spend }
}

export function apply(ctx: Context, config: SessionTitleConfig = {}): void {
  const byDefault = !off(config?.enabled)
  ctx.sessions.defineEvent('session/title')
  ctx.inject(['settings'], (inner) => {
    inner.settings.define('session.titles', {
      schema: { enum: [true, false, 'on', 'off'] },
      default: byDefault,
      description: 'model-written session titles after the first completed turn (one small extra model request)',
      env: 'DSH_SESSION_TITLES',
      allowed: 'on or off',
      projectSafe: true,
    })
  })
  const enabled = () => {
    const settings = ctx.get('settings')
    return settings?.has('session.titles') ? !off(settings.get('session.titles')) : byDefault
  }
  const timeoutMs = config?.timeoutMs ?? 15_000
  ctx.on('agent/turn-stopping', async ({ agent, session, reason }) => {
    if (reason !== 'completed' || session.header.parentSession || !enabled()) return undefined
    if (session.events.some((event) => event.type === 'session/title')) return undefined
    const text = excerpt(session)
    if (!text) return undefined
    try {
      const title = await generate(ctx, agent.model, text, timeoutMs)
      if (title) session.append('session/title', title, { ignorable: true })
    } catch (error) {
      ctx.logger('session-title').debug('no title for %s: %s', session.id, String(error))
    }
    return undefined
  })
}

export default { name, inject, apply }
