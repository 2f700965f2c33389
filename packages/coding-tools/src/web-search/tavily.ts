// The Tavily provider row (`ctx.webSearch` provider "tavily"): POST https://api.tavily.com/search with
// `{ query, max_results }` and `Authorization: Bearer <key>`, the key from the TAVILY_API_KEY credential.
// Hits come from `results[]` (title, url, content).
import { endpoint, providerRow, requestJson, resultList, text } from './provider-row.js'

export type { ProviderRowConfig as TavilyConfig } from './provider-row.js'

export default providerRow({
  name: 'tavily',
  keyName: 'TAVILY_API_KEY',
  defaultBaseUrl: 'https://api.tavily.com',
  create({ baseUrl, key }) {
    return async ({ query, count, signal }) => {
      const answer = await requestJson('tavily', endpoint(baseUrl, '/search'), {
        method: 'POST',
        headers: { authorization: `Bearer ${await key()}` },
        body: { query, max_results: count, search_depth: 'basic' },
        signal,
      })
      return resultList('tavily', answer, ['results']).map((hit) => ({
        title: text(hit, 'title'),
        url: text(hit, 'url'),
        snippet: text(hit, 'content'),
      }))
    }
  },
})
