// The Brave Search provider row (`ctx.webSearch` provider "brave"): the Brave Search API's web search,
// GET https://api.search.brave.com/res/v1/web/search?q=...&count=N with `X-Subscription-Token`, the key
// from the BRAVE_API_KEY credential. Hits come from `web.results[]` (title, url, description).
import { endpoint, providerRow, requestJson, resultList, text } from './provider-row.js'

export type { ProviderRowConfig as BraveConfig } from './provider-row.js'

export default providerRow({
  name: 'brave',
  keyName: 'BRAVE_API_KEY',
  defaultBaseUrl: 'https://api.search.brave.com',
  create({ baseUrl, key }) {
    return async ({ query, count, signal }) => {
      const url = endpoint(baseUrl, '/res/v1/web/search')
      url.searchParams.set('q', query)
      url.searchParams.set('count', String(count))
      const answer = await requestJson('brave', url, {
        method: 'GET',
        headers: { 'x-subscription-token': await key() },
        signal,
      })
      return resultList('brave', answer, ['web', 'results']).map((hit) => ({
        title: text(hit, 'title'),
        url: text(hit, 'url'),
        snippet: text(hit, 'description'),
      }))
    }
  },
})
