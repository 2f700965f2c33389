// The SearXNG provider row (`ctx.webSearch` provider "searxng"): a self-hosted metasearch instance,
// GET {baseUrl}/search?q=...&format=json (the instance must list `json` in `search.formats`). No key;
// the base URL is required (`dsh config set webSearch.searxng.baseUrl http://localhost:8888`).
import { endpoint, providerRow, requestJson, resultList, text } from './provider-row.js'

export type { ProviderRowConfig as SearxngConfig } from './provider-row.js'

export default providerRow({
  name: 'searxng',
  baseUrlHint: 'dsh config set webSearch.searxng.baseUrl http://your-searxng:8888',
  create({ baseUrl }) {
    return async ({ query, signal }) => {
      const url = endpoint(baseUrl, '/search')
      url.searchParams.set('q', query)
      url.searchParams.set('format', 'json')
      const answer = await requestJson('searxng', url, {
        method: 'GET',
        signal,
        hint403: "enable the json format in the instance's settings.yml: search.formats",
      })
      return resultList('searxng', answer, ['results']).map((hit) => ({
        title: text(hit, 'title'),
        url: text(hit, 'url'),
        snippet: text(hit, 'content'),
      }))
    }
  },
})
