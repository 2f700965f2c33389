// @dsh/coding-tools/web-search: the web search seam `ctx.webSearch`. Provider rows (searxng, brave, tavily,
// exa) register search backends; callers search through the service, which picks the named provider or
// the only one, bounds every provider call by a timeout and the caller's signal, and turns every
// provider failure into a `WEB_SEARCH_*` error that names the provider. Also owns the `webSearch` setting
// the provider rows read (which provider is selected, and per provider its base URL, key name and bounds).
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type {} from '@dsh/settings'

/** One search hit as the model sees it. */
export interface WebSearchHit {
  title: string
  url: string
  snippet: string
}

/** One search. Bounds left out use the provider's, then the service's configured defaults. */
export interface WebSearchRequest {
  query: string
  /** Provider name; without it the only registered provider is used. */
  provider?: string
  /** How many results to ask for (1..20). */
  count?: number
  signal?: AbortSignal
}

export interface WebSearchResponse {
  /** The provider that answered. */
  provider: string
  query: string
  results: WebSearchHit[]
}

/** What the service hands a provider: the count is decided and the signal carries the timeout. */
export interface ProviderSearchRequest {
  query: string
  count: number
  signal: AbortSignal
}

/**
 * A search backend. Throws `HarnessError` with a `WEB_SEARCH_*` code naming itself for failures; any
 * other throw is wrapped by the service as `WEB_SEARCH_FAILED` naming the provider.
 */
export interface WebSearchProvider {
  readonly name: string
  /** The bound of one call; default the service's `timeoutMs`. */
  readonly timeoutMs?: number
  /** The count asked for when the request names none; default the service's `count`. */
  readonly count?: number
  search(request: ProviderSearchRequest): Promise<WebSearchHit[]>
}

export interface WebSearchConfig {
  /** Bound of one provider call. Default 15 s. */
  timeoutMs?: number
  /** Results asked for when neither the request nor the provider says. Default 5. */
  count?: number
}

/** Per-provider values of the `webSearch` setting. */
export interface WebSearchProviderSetting {
  baseUrl?: string
  /** The credential name holding the key (e.g. BRAVE_API_KEY). */
  apiKey?: string
  timeoutMs?: number
  count?: number
}

/** The `webSearch` setting: `{ provider: brave, brave: { count: 8 }, searxng: { baseUrl: ... } }`. */
export type WebSearchSetting = { provider?: string } & { [name: string]: WebSearchProviderSetting | string | undefined }

declare module 'cordis' {
  interface Context {
    webSearch: WebSearchService
  }
  interface Events {
    /** The set of registered web search providers changed (names, sorted). */
    'web-search/providers'(names: string[]): void
  }
}

declare module '@dsh/settings' {
  interface SettingsMap {
    /** Which web search provider the `web_search` tool uses, and per provider its settings. */
    webSearch: WebSearchSetting
  }
}

export const MAX_COUNT = 20
export const DEFAULT_TIMEOUT_MS = 15_000

const NAME = /^[a-z][a-z0-9-]*$/

/** The JSON Schema of the `webSearch` setting. */
export const webSearchSettingSchema = {
  type: 'object',
  properties: { provider: { type: 'string', pattern: NAME.source } },
  additionalProperties: {
    type: 'object',
    properties: {
      baseUrl: { type: 'string', pattern: '^https?://' },
      apiKey: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      timeoutMs: { type: 'integer', minimum: 1 },
      count: { type: 'integer', minimum: 1, maximum: MAX_COUNT },
    },
    additionalProperties: false,
  },
} as const

function positive(value: unknown, fallback: number, key: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new HarnessError('WEB_SEARCH_CONFIG_INVALID', `web search config: ${key} must be a whole number >= 1`, {
      key,
    })
  }
  return value
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }

/** One line of plain text: tags (Brave marks matches with <strong>) dropped, common entities decoded. */
const oneLine = (text: unknown): string =>
  typeof text === 'string'
    ? text
        .replace(/<[^>]{0,200}>/g, '')
        .replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,5});/gi, (whole, name: string) => {
          const code =
            name[0] !== '#'
              ? undefined
              : name[1] === 'x' || name[1] === 'X'
                ? Number.parseInt(name.slice(2), 16)
                : Number(name.slice(1))
          if (code !== undefined) return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
          return ENTITIES[name.toLowerCase()] ?? whole
        })
        .replace(/\s+/g, ' ')
        .trim()
    : ''

/** A hit cleaned for the model: single-line title and snippet (tags dropped), snippet capped at 500 chars. */
export function cleanHit(hit: Partial<WebSearchHit>): WebSearchHit | undefined {
  if (typeof hit?.url !== 'string' || hit.url === '') return undefined
  const snippet = oneLine(hit.snippet)
  return {
    title: oneLine(hit.title) || hit.url,
    url: hit.url,
    snippet: snippet.length > 500 ? `${snippet.slice(0, 499)}…` : snippet,
  }
}

/**
 * `ctx.webSearch`: the registry of search providers. Registration lives as long as the registering
 * plugin. Provider choice never depends on registration order: a request names its provider, or exactly
 * one must be registered.
 */
export class WebSearchService extends Service {
  static readonly provide = 'webSearch'
  readonly timeoutMs: number
  readonly count: number
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly registered = new Map<string, WebSearchProvider>()
  private readonly problems = new Map<string, string>()

  constructor(ctx: Context, config: WebSearchConfig = {}) {
    const c = config ?? {}
    const timeoutMs = positive(c.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs')
    const count = Math.min(positive(c.count, 5, 'count'), MAX_COUNT)
    super(ctx, 'webSearch')
    this.timeoutMs = timeoutMs
    this.count = count
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('webSearch', {
        schema: webSearchSettingSchema,
        default: {},
        description:
          'web search for the web_search tool: provider (searxng, brave, tavily or exa) and per provider { baseUrl?, apiKey?, count?, timeoutMs? }; no provider, no tool',
        allowed:
          '{ provider: searxng|brave|tavily|exa, searxng: { baseUrl: http(s)://... }, brave: { apiKey?: CREDENTIAL_NAME, count?: 1-20, timeoutMs? } }',
      })
    })
  }

  /**
   * Registers a provider for the caller's lifetime. Throws `DUPLICATE_WEB_SEARCH_PROVIDER` for a taken
   * name, `WEB_SEARCH_CONFIG_INVALID` for a name that is not lower-case letters, digits and dashes.
   */
  registerProvider(provider: WebSearchProvider): () => void {
    if (typeof provider?.name !== 'string' || !NAME.test(provider.name) || typeof provider.search !== 'function') {
      throw new HarnessError(
        'WEB_SEARCH_CONFIG_INVALID',
        'a web search provider needs a name like "brave" and a search function',
        { name: String(provider?.name) },
      )
    }
    return this.ctx.effect(() => {
      if (this.registered.has(provider.name)) {
        throw new HarnessError(
          'DUPLICATE_WEB_SEARCH_PROVIDER',
          `web search provider "${provider.name}" is already registered`,
          { name: provider.name },
        )
      }
      this.registered.set(provider.name, provider)
      this.ctx.emit('web-search/providers', this.providers())
      return () => {
        if (this.registered.get(provider.name) !== provider) return
        this.registered.delete(provider.name)
        this.ctx.emit('web-search/providers', this.providers())
      }
    }, `webSearch.registerProvider(${provider.name})`)
  }

  /**
   * Says why provider `name` is chosen but not registered (a missing key or base URL) for the caller's
   * lifetime or until the returned disposer runs: `dsh doctor` shows it, since a warning in the log
   * is easy to miss.
   */
  reportUnavailable(name: string, why: string): () => void {
    return this.ctx.effect(() => {
      this.problems.set(name, why)
      return () => {
        if (this.problems.get(name) === why) this.problems.delete(name)
      }
    }, `webSearch.reportUnavailable(${name})`)
  }

  /** Chosen providers that could not register, with why. */
  unavailable(): { name: string; why: string }[] {
    return [...this.problems].map(([name, why]) => ({ name, why }))
  }

  /** Registered provider names, sorted. */
  providers(): string[] {
    return [...this.registered.keys()].sort()
  }

  /**
   * Searches through the named provider or the only one, bounded by the provider's timeout and the
   * request's signal. Throws `WEB_SEARCH_INVALID_QUERY`, `WEB_SEARCH_NO_PROVIDER`,
   * `WEB_SEARCH_UNKNOWN_PROVIDER`, `WEB_SEARCH_PROVIDER_AMBIGUOUS`, `WEB_SEARCH_TIMEOUT`,
   * `WEB_SEARCH_FAILED` (the last two name the provider), or the signal's reason when the caller aborts.
   */
  async search(request: WebSearchRequest): Promise<WebSearchResponse> {
    const query = typeof request?.query === 'string' ? request.query.trim() : ''
    if (query === '') throw new HarnessError('WEB_SEARCH_INVALID_QUERY', 'a web search needs a non-empty query', {})
    const provider = this.pick(request.provider)
    const wanted = request.count ?? provider.count ?? this.count
    const count = Math.max(1, Math.min(MAX_COUNT, Math.floor(Number.isFinite(wanted) ? wanted : this.count)))
    const timeoutMs = provider.timeoutMs ?? this.timeoutMs
    const outer = request.signal
    outer?.throwIfAborted()
    const controller = new AbortController()
    let timedOut: HarnessError | undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    let onAbort: (() => void) | undefined
    // Settles when the bound or the caller ends the call, so a provider that ignores its signal cannot hang us.
    const stopped = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = new HarnessError(
          'WEB_SEARCH_TIMEOUT',
          `web search provider "${provider.name}" did not answer within ${timeoutMs} ms`,
          { provider: provider.name, timeoutMs },
        )
        controller.abort(timedOut)
        reject(timedOut)
      }, timeoutMs)
      onAbort = () => {
        controller.abort(outer?.reason)
        reject(outer?.reason)
      }
      outer?.addEventListener('abort', onAbort, { once: true })
    })
    stopped.catch(() => undefined)
    try {
      const hits = await Promise.race([provider.search({ query, count, signal: controller.signal }), stopped])
      if (!Array.isArray(hits)) {
        throw new HarnessError('WEB_SEARCH_FAILED', `web search provider "${provider.name}" failed: no result list`, {
          provider: provider.name,
        })
      }
      const results = hits.flatMap((hit) => cleanHit(hit) ?? []).slice(0, count)
      return { provider: provider.name, query, results }
    } catch (error) {
      if (outer?.aborted) throw outer.reason
      // Whatever the provider threw as its call was cut, the bound is the cause.
      if (timedOut) throw timedOut
      if (error instanceof HarnessError && error.code.startsWith('WEB_SEARCH_')) throw error
      throw new HarnessError(
        'WEB_SEARCH_FAILED',
        `web search provider "${provider.name}" failed: ${error instanceof Error ? error.message : String(error)}`,
        { provider: provider.name },
      )
    } finally {
      clearTimeout(timer)
      if (onAbort) outer?.removeEventListener('abort', onAbort)
    }
  }

  private pick(name: string | undefined): WebSearchProvider {
    if (name !== undefined) {
      const provider = this.registered.get(name)
      if (!provider) {
        throw new HarnessError('WEB_SEARCH_UNKNOWN_PROVIDER', `no web search provider named "${name}"`, {
          name,
          providers: this.providers(),
        })
      }
      return provider
    }
    const all = [...this.registered.values()]
    if (all.length === 0) {
      throw new HarnessError(
        'WEB_SEARCH_NO_PROVIDER',
        'no web search provider is registered; select one with `dsh config set webSearch.provider NAME`',
        {},
      )
    }
    if (all.length > 1) {
      throw new HarnessError('WEB_SEARCH_PROVIDER_AMBIGUOUS', 'several web search providers are registered; name one', {
        providers: this.providers(),
      })
    }
    return all[0] as WebSearchProvider
  }
}

export default WebSearchService
