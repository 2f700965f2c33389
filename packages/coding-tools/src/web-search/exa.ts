// The Exa provider row (`ctx.webSearch` provider "exa"): POST https://api.exa.ai/search with
// `{ query, numResults, contents: { text: { maxCharacters } } }` and `x-api-key`, the key from the
// EXA_API_KEY credential. Hits come from `results[]` (title, url, and highlights or text as the snippet).
import { endpoint, field, providerRow, requestJson, resultList, text } from './provider-row.js'

export type { ProviderRowConfig as ExaConfig } from './provider-row.js'

/** Characters of page text asked for per hit (the snippet is cut to 500 anyway). */
const MAX_CHARACTERS = 600

export default providerRow({
  name: 'exa',
  keyName: 'EXA_API_KEY',
  defaultBaseUrl: 'https://api.exa.ai',
  create({ baseUrl, key }) {
    return async ({ query, count, signal }) => {
      const answer = await requestJson('exa', endpoint(baseUrl, '/search'), {
        method: 'POST',
        headers: { 'x-api-key': await key() },
        body: { query, numResults: count, contents: { text: { maxCharacters: MAX_CHARACTERS } } },
        signal,
      })
      return resultList('exa', answer, ['results']).map((hit) => {
        const highlights = field(hit, 'highlights')
        const highlight = Array.isArray(highlights) ? highlights.filter((h) => typeof h === 'string').join(' … ') : ''
        return { title: text(hit, 'title'), url: text(hit, 'url'), snippet: highlight || text(hit, 'text') }
      })
    }
  },
})
