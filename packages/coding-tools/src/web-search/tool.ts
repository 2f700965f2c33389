// The model-facing `web_search` tool: searches through `ctx.webSearch` and returns a numbered list of
// title / URL / snippet. Offered only while a search provider is registered (registered and removed as
// providers come and go). Hits whose URL points at a private or local address are dropped and counted.
// Refusals and failures come back as error results carrying the service's `WEB_SEARCH_*` code.

import { isIP } from 'node:net'
import { defineTool, ToolError } from '@dsh/agent/tools'
import { type Context, HarnessError } from '@dsh/kernel'
import { isPublicAddress } from '../web-fetch/addresses.js'
import { MAX_COUNT, type WebSearchHit } from './index.js'

export interface WebSearchToolConfig {
  /** Provider to use (default: the only registered one). */
  provider?: string
}

interface Args {
  query: string
  count?: number
}

/**
 * Whether a hit's URL may be shown to the model: http(s), and not a local name (`localhost`, `*.localhost`,
 * `*.local`, `*.internal`, a name without a dot) or an IP literal in a non-public range. Names are not
 * resolved: a public-looking name that resolves privately is web_fetch's to refuse.
 */
export function isShownUrl(raw: string): boolean {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return false
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
  const host = url.hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
  if (isIP(host) !== 0) return isPublicAddress(host)
  if (host === 'localhost' || !host.includes('.')) return false
  return !/\.(localhost|local|internal|home\.arpa|localdomain)$/.test(host)
}

function render(results: readonly WebSearchHit[]): string {
  return results
    .map((hit, index) =>
      [`${index + 1}. ${hit.title}`, `   ${hit.url}`, ...(hit.snippet ? [`   ${hit.snippet}`] : [])].join('\n'),
    )
    .join('\n\n')
}

/** Builds the tool over a context that has `ctx.webSearch`. */
export function createWebSearchTool(ctx: Context, config: WebSearchToolConfig = {}) {
  return defineTool<Args>({
    name: 'web_search',
    description:
      'Search the web and return a numbered list of results (title, URL, snippet). ' +
      'Use web_fetch on a result URL to read the page. Results on private or local addresses are left out.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, description: 'What to search for.' },
        count: { type: 'integer', minimum: 1, maximum: MAX_COUNT, description: 'How many results (default 5).' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    mode: 'parallel-safe',
    presentation: (args) => ({ kind: 'generic', title: `Search ${args.query}` }),
    async execute(args, call) {
      try {
        const found = await ctx.webSearch.search({
          query: args.query,
          signal: call.signal,
          ...(config.provider ? { provider: config.provider } : {}),
          ...(args.count !== undefined ? { count: args.count } : {}),
        })
        const shown = found.results.filter((hit) => isShownUrl(hit.url))
        const dropped = found.results.length - shown.length
        const head = `Search results for "${found.query}" (${found.provider}):`
        const body = shown.length > 0 ? render(shown) : 'No results.'
        const note =
          dropped > 0 ? `\n\n[${dropped} result${dropped === 1 ? '' : 's'} on private or local addresses left out]` : ''
        return {
          content: `${head}\n\n${body}${note}`,
          details: {
            provider: found.provider,
            query: found.query,
            count: shown.length,
            dropped,
            urls: shown.map((hit) => hit.url),
          },
        }
      } catch (error) {
        if (error instanceof HarnessError) throw new ToolError(error.message, error.code)
        throw error
      }
    },
  })
}

/**
 * The tool row: registers `web_search` on `ctx.tools` while at least one search provider is registered
 * (no provider, no tool: the model is never offered a search that cannot run).
 */
export const WebSearchTool = {
  name: 'web-search-tool',
  inject: ['webSearch', 'tools'],
  apply(ctx: Context, config: WebSearchToolConfig = {}) {
    const tool = createWebSearchTool(ctx, config ?? {})
    let off: (() => void) | undefined
    const sync = (names: readonly string[]) => {
      if (names.length > 0 && !off) off = ctx.tools.register(tool)
      else if (names.length === 0 && off) {
        off()
        off = undefined
      }
    }
    ctx.on('web-search/providers', sync)
    sync(ctx.webSearch.providers())
  },
}

export default WebSearchTool
