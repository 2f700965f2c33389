// What the web search provider rows share: when a row registers its provider (selected by the `webSearch`
// setting or `enabled: true`, with its base URL and key present), re-deciding when the setting changes,
// and one JSON-over-HTTP call whose every failure names the provider. Not a provider itself.
import { type Context, directService, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/settings'
import type {} from '@dsh/settings/credentials'
import type { ProviderSearchRequest, WebSearchHit, WebSearchProvider, WebSearchSetting } from './index.js'

/** The config of every provider row. */
export interface ProviderRowConfig {
  /** true: register without the setting naming this provider; false: never. Default: the `webSearch.provider` setting decides. */
  enabled?: boolean
  /** The API's base URL (searxng: required; the others default to the public API). */
  baseUrl?: string
  /** Bound of one search call. Default the service's (15 s). */
  timeoutMs?: number
  /** Results asked for when the model names no count. Default the service's (5). */
  count?: number
  /** The credential name holding the key (brave: BRAVE_API_KEY, tavily: TAVILY_API_KEY, exa: EXA_API_KEY). */
  apiKey?: string
}

/** What a provider module says about itself. */
export interface ProviderSpec {
  name: string
  /** The default credential name of the key; absent when the API takes no key. */
  keyName?: string
  /** The public API's base URL; absent when the user must name one. */
  defaultBaseUrl?: string
  /** One line saying how to give the base URL, for the warning when none is set. */
  baseUrlHint?: string
  /** Builds the search call. `key()` resolves the key at each call (a rotated key works at once). */
  create(options: {
    baseUrl: string
    key: () => Promise<string>
  }): (request: ProviderSearchRequest) => Promise<WebSearchHit[]>
}

type Plan = { provider: WebSearchProvider } | { warn: string } | { inert: true }

function checkConfig(name: string, config: ProviderRowConfig): ProviderRowConfig {
  const c = config ?? {}
  const bad = (key: string, what: string): never => {
    throw new HarnessError('WEB_SEARCH_CONFIG_INVALID', `web search provider "${name}": ${key} must be ${what}`, {
      provider: name,
      key,
    })
  }
  if (c.enabled !== undefined && typeof c.enabled !== 'boolean') bad('enabled', 'true or false')
  if (c.baseUrl !== undefined && (typeof c.baseUrl !== 'string' || !/^https?:\/\//.test(c.baseUrl)))
    bad('baseUrl', 'an http(s) URL')
  for (const key of ['timeoutMs', 'count'] as const) {
    const value = c[key]
    if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 1))
      bad(key, 'a whole number >= 1')
  }
  if (c.apiKey !== undefined && (typeof c.apiKey !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(c.apiKey)))
    bad('apiKey', 'a credential name like BRAVE_API_KEY')
  return c
}

/** A provider row (a Cordis plugin) for `spec`. */
export function providerRow(spec: ProviderSpec) {
  return {
    name: `web-search-${spec.name}`,
    inject: spec.keyName ? ['webSearch', 'credentials'] : ['webSearch'],
    async apply(ctx: Context, rawConfig: ProviderRowConfig = {}) {
      const config = checkConfig(spec.name, rawConfig)
      const settings = directService(ctx, 'settings')
      const log = ctx.logger('web-search')
      let off: (() => void) | undefined
      let generation = 0
      let warned: string | undefined

      const plan = async (): Promise<Plan> => {
        const s = settings()
        let setting: WebSearchSetting | undefined
        let fromProject = false
        if (config.enabled === undefined || config.enabled) {
          try {
            if (s?.has('webSearch')) {
              const resolved = s.resolve('webSearch')
              setting = resolved.value as WebSearchSetting
              fromProject = resolved.source === 'project'
            }
          } catch {
            // An invalid setting is reported by the settings service (`dsh config`); this row stays out.
            if (config.enabled === undefined) return { inert: true }
          }
        }
        const selected = config.enabled ?? setting?.provider === spec.name
        if (!selected) return { inert: true }
        const own = setting?.[spec.name]
        let entry = own && typeof own === 'object' ? own : {}
        if (fromProject && spec.keyName) {
          // A project may select a provider, never where a stored key goes: base URL and key name of a
          // keyed provider come from the user's own settings file (or the row) only.
          const user = (s?.fileValue('webSearch', 'user') as WebSearchSetting | undefined)?.[spec.name]
          const bound = user && typeof user === 'object' ? user : {}
          entry = {
            ...entry,
            baseUrl: bound.baseUrl,
            apiKey: bound.apiKey,
          }
        }
        const why = `web search provider "${spec.name}" is not registered (web_search is not offered without a provider)`
        const baseUrl = entry.baseUrl ?? config.baseUrl ?? spec.defaultBaseUrl
        if (!baseUrl) return { warn: `${why}: it needs a base URL; ${spec.baseUrlHint ?? 'set baseUrl'}` }
        let key = async () => ''
        if (spec.keyName) {
          const keyName = entry.apiKey ?? config.apiKey ?? spec.keyName
          const credentials = ctx.credentials
          if (!(await credentials.get(keyName))) {
            return {
              warn: `${why}: no ${keyName} credential; set it in the environment, $DSH_HOME/.credentials.yaml or .env`,
            }
          }
          key = async () => {
            const value = await credentials.get(keyName)
            if (!value) {
              throw new HarnessError(
                'WEB_SEARCH_FAILED',
                `web search provider "${spec.name}" failed: the ${keyName} credential is gone`,
                { provider: spec.name, credential: keyName },
              )
            }
            return value
          }
        }
        const timeoutMs = entry.timeoutMs ?? config.timeoutMs
        const count = entry.count ?? config.count
        return {
          provider: {
            name: spec.name,
            ...(timeoutMs !== undefined ? { timeoutMs } : {}),
            ...(count !== undefined ? { count } : {}),
            search: spec.create({ baseUrl, key }),
          },
        }
      }

      const refresh = async (): Promise<void> => {
        const mine = ++generation
        const next = await plan()
        if (mine !== generation) return
        off?.()
        off = undefined
        if ('warn' in next) {
          if (next.warn !== warned) log.warn(next.warn)
          warned = next.warn
          off = ctx.webSearch.reportUnavailable(spec.name, next.warn)
          return
        }
        warned = undefined
        if ('provider' in next) {
          try {
            off = ctx.webSearch.registerProvider(next.provider)
          } catch (error) {
            log.warn(`web search provider "${spec.name}" is not registered: ${(error as Error).message}`)
          }
        }
      }

      // With the settings row (now or once it activates): decide again, and on every change of the setting.
      ctx.inject(['settings'], (inner) => {
        void refresh()
        inner.on('settings/changed', (change) => {
          if (change.key === 'webSearch' || change.key.startsWith('webSearch.')) void refresh()
        })
      })
      await refresh()
    },
  }
}

/** `baseUrl` + `path`, without doubling the slash. */
export function endpoint(baseUrl: string, path: string): URL {
  return new URL(`${baseUrl.replace(/\/+$/, '')}${path}`)
}

const HINTS: Record<number, string> = {
  401: 'the key was refused',
  403: 'forbidden',
  429: 'rate limited',
}

/**
 * One JSON call for provider `provider`. No redirects (a key never follows one). Throws `WEB_SEARCH_FAILED`
 * naming the provider for a network error, an HTTP status >= 300, or an answer that is not JSON; rethrows
 * the signal's reason when the signal ended the call.
 */
export async function requestJson(
  provider: string,
  url: URL,
  init: {
    method: 'GET' | 'POST'
    headers?: Record<string, string>
    body?: unknown
    signal: AbortSignal
    hint403?: string
  },
): Promise<unknown> {
  const fail = (detail: string, facts: Record<string, unknown> = {}): never => {
    throw new HarnessError('WEB_SEARCH_FAILED', `web search provider "${provider}" failed: ${detail}`, {
      provider,
      ...facts,
    })
  }
  let response: Response
  try {
    response = await fetch(url, {
      method: init.method,
      headers: {
        accept: 'application/json',
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      redirect: 'manual',
      signal: init.signal,
    })
  } catch (error) {
    if (init.signal.aborted) throw init.signal.reason
    const cause = (error as { cause?: { message?: string } }).cause?.message
    return fail(`cannot reach ${url.origin}: ${cause ?? (error as Error).message}`)
  }
  if (response.status >= 300) {
    await response.body?.cancel().catch(() => undefined)
    const hint = response.status === 403 && init.hint403 ? init.hint403 : HINTS[response.status]
    const redirect = response.status < 400 ? 'redirects are not followed' : undefined
    return fail(`HTTP ${response.status}${hint || redirect ? ` (${hint ?? redirect})` : ''}`, {
      status: response.status,
    })
  }
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    if (init.signal.aborted) throw init.signal.reason
    return fail(`reading the answer: ${(error as Error).message}`)
  }
  try {
    return JSON.parse(text)
  } catch {
    return fail('the answer is not JSON')
  }
}

/** `value.key` when `value` is an object; else undefined. */
export function field(value: unknown, key: string): unknown {
  return value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined
}

/** The array at `path` of a JSON answer, or a `WEB_SEARCH_FAILED` naming the provider and the path. */
export function resultList(provider: string, answer: unknown, path: readonly string[]): unknown[] {
  let value: unknown = answer
  for (const key of path) value = field(value, key)
  if (value === undefined && path.length > 1) return [] // e.g. Brave omits `web` when nothing matched
  if (!Array.isArray(value)) {
    throw new HarnessError(
      'WEB_SEARCH_FAILED',
      `web search provider "${provider}" failed: the answer has no ${path.join('.')} list`,
      { provider },
    )
  }
  return value
}

/** A string field, or ''. */
export const text = (value: unknown, key: string): string => {
  const found = field(value, key)
  return typeof found === 'string' ? found : ''
}
