// Where each provider's key and base URL come from, and which model is the default and why: one
// reading that `dsh config list` and `dsh models` both print, so the two never disagree (issue 31).
import { type Context, HarnessError } from '@dsh/kernel'
import type { ProviderModels } from '@dsh/llm'
import type {} from '@dsh/settings'

export interface ProviderSource {
  provider: string
  /** A key was found, or none is needed: `dsh models` lists this provider's models. */
  usable: boolean
  /** `ANTHROPIC_API_KEY from environment`, `no key (set DEEPSEEK_API_KEY)`, `needs no key`. */
  key: string
  /** Where its requests go, with the variable that overrides it, when the adapter can say. */
  url?: string
  /** Why a call cannot go anywhere (an endpoint model without its endpoint). */
  error?: string
}

export interface ModelSources {
  /** `provider:model` a run uses when nothing names one. */
  defaultModel: string
  /** Why: the `model` setting (and its layer) or the default provider's own default. */
  defaultFrom: string
  /** The default model's provider has no key, or no row serves it. */
  defaultUnusable?: string
  providers: ProviderSource[]
  /** The catalogs behind `providers` (same order), for `dsh models`' table. */
  catalogs: ProviderModels[]
}

/** Reads the providers (all, or `provider`) and the default model from the booted `root`. */
export async function modelSources(root: Context, options: { provider?: string } = {}): Promise<ModelSources> {
  const llm = root.get('llm')
  if (!llm) throw new HarnessError('CONFIG_NO_LLM', 'this profile has no llm row', {})
  const catalogs = await llm.catalogs(options.provider === undefined ? {} : { provider: options.provider })
  const providers = await Promise.all(
    catalogs.map(async (catalog): Promise<ProviderSource> => {
      let model = ''
      try {
        model = llm.resolveCall({ provider: catalog.provider }).model
      } catch {}
      const access = await llm.access(catalog.provider, model || (catalog.defaultModel ?? ''))
      const names = access?.keyNames.join(' or ') ?? ''
      const key = access?.key
        ? `${access.key.name} from ${access.key.location}`
        : access?.keyRequired
          ? `no key (set ${names})`
          : names
            ? `needs no key (${names} unset)`
            : 'needs no key'
      const url = access?.url
        ? `${access.url}${access.urlVariable ? ` (${access.urlVariable} overrides)` : ''}`
        : undefined
      return {
        provider: catalog.provider,
        usable: catalog.configured,
        key,
        ...(url ? { url } : {}),
        ...(access?.error ? { error: access.error } : {}),
      }
    }),
  )
  const call = llm.resolveCall({})
  const defaultModel = `${call.provider}:${call.model || '(its default)'}`
  const setting = root.get('settings')?.has('model') ? root.get('settings')?.resolve('model') : undefined
  const defaultFrom =
    setting?.value !== undefined
      ? `model setting, ${setting.location ? `${setting.source} ${setting.location}` : setting.source}`
      : `model is unset: ${call.provider}'s default`
  const own = providers.find((source) => source.provider === call.provider) ?? (await single(root, call.provider))
  const defaultUnusable = !own
    ? `no row serves provider "${call.provider}"`
    : own.error
      ? own.error
      : own.usable
        ? undefined
        : own.key
  return {
    defaultModel,
    defaultFrom,
    ...(defaultUnusable ? { defaultUnusable } : {}),
    providers,
    catalogs,
  }
}

/** The default model's provider when the reading was narrowed to another one. */
async function single(root: Context, provider: string): Promise<ProviderSource | undefined> {
  const llm = root.get('llm')
  if (!llm?.providers().includes(provider)) return undefined
  return (await modelSources(root, { provider })).providers[0]
}

/**
 * The reading as lines, the same in `dsh config list` and `dsh models`: the default model and why, then
 * the usable providers and the default model's own (or every provider with `all`), then a count of the rest.
 */
export function modelSourceLines(sources: ModelSources, options: { all?: boolean } = {}): string[] {
  const defaultProvider = sources.defaultModel.slice(0, sources.defaultModel.indexOf(':'))
  const shown = sources.providers.filter(
    (source) => options.all || source.usable || source.provider === defaultProvider,
  )
  const hidden = sources.providers.length - shown.length
  return [
    `default model ${sources.defaultModel} (${sources.defaultFrom})${sources.defaultUnusable ? `: not usable, ${sources.defaultUnusable}` : ''}`,
    ...shown.map(
      (source) =>
        `  ${source.provider}: ${source.usable ? 'usable' : 'not usable'}; key: ${source.key}${source.url ? `; base URL ${source.url}` : ''}${source.error ? `; ${source.error}` : ''}`,
    ),
    ...(hidden > 0
      ? [`  (${hidden} other providers are not usable: no key or endpoint; dsh models --all lists them)`]
      : []),
  ]
}
