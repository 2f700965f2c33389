// @dsh/coding-tools/web-fetch: the web fetch seam `ctx.webFetch`. Providers register fetchers (the HTTP one is @dsh/coding-tools/web-fetch/fetch-http);
// callers fetch through the service, which picks the named provider or the only one. Also the address
// policy every fetch provider applies (addresses.ts).
import { type Context, HarnessError, Service } from '@dsh/kernel'

export { type AddressPolicy, createAddressPolicy, isPublicAddress } from './addresses.js'

/** One fetch. Bounds left out use the provider's configured defaults. */
export interface WebFetchRequest {
  url: string
  /** Provider name; without it the only registered provider is used. */
  provider?: string
  /** Cap of the returned text in characters. */
  maxChars?: number
  /** Return HTML as it came instead of converting it to markdown. */
  raw?: boolean
  signal?: AbortSignal
}

export interface WebFetchResult {
  /** The URL the text came from (after same-origin redirects). */
  url: string
  status: number
  /** The media type without parameters, e.g. `text/html`. */
  contentType: string
  /** The charset the body was decoded with. */
  charset: string
  title?: string
  /** Readable text: markdown for HTML (unless `raw`), the decoded body otherwise. */
  text: string
  /** True when the byte or character bound cut the body. */
  truncated: boolean
  /** Bytes of the (decompressed) body read. */
  bytes: number
  /** Each redirect followed, in order. */
  redirects: string[]
}

/** A fetch backend. Throws `HarnessError` with a `WEB_*` code (see README) for refusals and failures. */
export interface WebFetcher {
  readonly name: string
  fetch(request: WebFetchRequest): Promise<WebFetchResult>
}

declare module 'cordis' {
  interface Context {
    webFetch: WebFetchService
  }
}

/**
 * `ctx.webFetch`: the registry of fetch providers. Registration lives as long as the registering plugin.
 * Provider choice never depends on registration order: a request names its provider, or exactly one
 * must be registered.
 */
export class WebFetchService extends Service {
  static readonly provide = 'webFetch'
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly fetchers = new Map<string, WebFetcher>()

  constructor(ctx: Context) {
    super(ctx, 'webFetch')
  }

  /** Registers a fetcher for the caller's lifetime. Throws `DUPLICATE_WEB_PROVIDER` for a taken name. */
  registerFetcher(fetcher: WebFetcher): () => void {
    return this.ctx.effect(() => {
      if (this.fetchers.has(fetcher.name)) {
        throw new HarnessError('DUPLICATE_WEB_PROVIDER', `web fetch provider "${fetcher.name}" is already registered`, {
          name: fetcher.name,
        })
      }
      this.fetchers.set(fetcher.name, fetcher)
      return () => {
        if (this.fetchers.get(fetcher.name) === fetcher) this.fetchers.delete(fetcher.name)
      }
    }, `webFetch.registerFetcher(${fetcher.name})`)
  }

  /** Registered fetch provider names, sorted. */
  providers(): string[] {
    return [...this.fetchers.keys()].sort()
  }

  /**
   * Fetches through the named provider or the only one. Throws `WEB_NO_PROVIDER`,
   * `WEB_UNKNOWN_PROVIDER`, `WEB_PROVIDER_AMBIGUOUS`, or whatever the provider throws.
   */
  async fetch(request: WebFetchRequest): Promise<WebFetchResult> {
    return this.pick(request.provider).fetch(request)
  }

  private pick(name: string | undefined): WebFetcher {
    if (name !== undefined) {
      const fetcher = this.fetchers.get(name)
      if (!fetcher) {
        throw new HarnessError('WEB_UNKNOWN_PROVIDER', `no web fetch provider named "${name}"`, {
          name,
          providers: this.providers(),
        })
      }
      return fetcher
    }
    const all = [...this.fetchers.values()]
    if (all.length === 0) throw new HarnessError('WEB_NO_PROVIDER', 'no web fetch provider is registered', {})
    if (all.length > 1) {
      throw new HarnessError('WEB_PROVIDER_AMBIGUOUS', 'several web fetch providers are registered; name one', {
        providers: this.providers(),
      })
    }
    return all[0] as WebFetcher
  }
}

export default WebFetchService
