// A session's model choice (`/model X`, the web model picker, a `--model` on attach) is a logged fact:
// `model/selected` in the session's log, applied again whenever an agent attaches the session, so the
// model a surface shows after a resume is the model the next request uses. `/model` checks a choice
// against what `dsh models` lists before it is made.
import type { Agent } from '@dsh/agent'
import { type Context, HarnessError } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import { isEvent, type Session } from '@dsh/session'

export interface ModelSelected {
  provider?: string
  model: string
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The session's model choice (the last one wins; applied on every attach). */
    'model/selected': ModelSelected
  }
}

/** The model a session's log chose last (`model/selected`), if any. */
export function selectedModel(session: Session): ModelSelected | undefined {
  const events = session.events
  for (let seq = events.length - 1; seq >= 0; seq--) {
    const event = events[seq]
    if (event && isEvent(event, 'model/selected')) return event.data
  }
  return undefined
}

/** Logs `choice` as the session's model and makes it the agent's, from its next request. */
export function selectModel(agent: Agent, choice: Partial<LlmCallConfig>): ModelSelected {
  const merged = { ...agent.model, ...choice }
  if (!merged.model) throw new HarnessError('COMMAND_USAGE', 'the model name is empty', {})
  const data: ModelSelected = { ...(merged.provider ? { provider: merged.provider } : {}), model: merged.model }
  // Ignorable: a reader without the builtin-commands row still opens the session.
  agent.session.append('model/selected', data, { ignorable: true })
  Object.assign(agent.model, data)
  return data
}

/**
 * On attach: a model the attach names explicitly becomes the session's choice (logged when it differs);
 * otherwise the logged choice, if any, is the agent's model.
 */
export function applyModelChoice(agent: Agent, explicit: Partial<LlmCallConfig> | undefined): void {
  const logged = selectedModel(agent.session)
  if (explicit?.model) {
    if (logged?.model !== explicit.model || (explicit.provider && logged?.provider !== explicit.provider)) {
      selectModel(agent, { ...(explicit.provider ? { provider: explicit.provider } : {}), model: explicit.model })
    }
    return
  }
  if (logged) Object.assign(agent.model, logged)
}

/** `provider:model` of what a call with the agent's model settings resolves to. */
export function currentModel(ctx: Context, agent: Agent): string {
  try {
    const resolved = ctx.get('llm')?.resolveCall({ ...agent.model })
    if (resolved) return `${resolved.provider}:${resolved.model}`
  } catch {}
  return `${agent.model.provider ?? '(default provider)'}:${agent.model.model ?? '(default model)'}`
}

/** The `provider:model` of every model of a usable provider, as `dsh models` lists them. */
export async function usableModels(ctx: Context): Promise<string[]> {
  const llm = ctx.get('llm')
  if (!llm) return []
  const catalogs = await llm.catalogs().catch(() => [])
  return catalogs.filter((c) => c.configured).flatMap((c) => c.models.map((model) => `${c.provider}:${model.id}`))
}

/**
 * Refuses a model that cannot be used, with the fix: an unknown provider, a provider without a key
 * or endpoint, a model its catalog does not list. A catalog that cannot load leaves the name unchecked.
 */
export async function checkModel(ctx: Context, choice: { provider: string; model: string }): Promise<void> {
  const llm = ctx.get('llm')
  if (!llm) return
  const { provider, model } = choice
  const fail = (message: string) => new HarnessError('MODEL_UNAVAILABLE', message, { provider, model })
  if (!llm.providers().includes(provider)) {
    throw fail(`no provider "${provider}" (providers: ${llm.providers().join(', ')}); /model lists the usable models`)
  }
  let catalogs: Awaited<ReturnType<typeof llm.catalogs>>
  try {
    catalogs = await llm.catalogs()
  } catch {
    return
  }
  const own = catalogs.find((catalog) => catalog.provider === provider)
  if (own && !own.configured) {
    throw fail(
      `provider ${provider} has no key or endpoint yet: add one (dsh config set, see dsh models --all and dsh doctor), then /model ${provider}:${model}`,
    )
  }
  if (!own || own.models.length === 0 || own.models.some((entry) => entry.id === model)) return
  const elsewhere = catalogs.find((catalog) => catalog.models.some((entry) => entry.id === model))
  const hint = elsewhere
    ? elsewhere.configured
      ? `; did you mean /model ${elsewhere.provider}:${model}?`
      : `; it is a ${elsewhere.provider} model, and ${elsewhere.provider} has no key yet (dsh models --all)`
    : ''
  throw fail(`${provider} has no model "${model}"${hint}; /model with no argument lists the usable models`)
}
