import { ToolsService } from '@dsh/agent/tools'
import { Context } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import HttpFetchProvider from '../../src/web-fetch/fetch-http.js'
import WebFetchService from '../../src/web-fetch/index.js'
import WebFetchTool from '../../src/web-fetch/tool.js'
import { startServer } from './server.js'

async function boot(allow?: string[]) {
  const root = new Context()
  root.plugin(ToolsService)
  root.plugin(WebFetchService)
  await root.plugin(HttpFetchProvider, allow ? { allow } : {})
  await root.plugin(WebFetchTool)
  return root
}

const fetchCall = (url: string) => ({ type: 'tool-call' as const, id: 'c1', name: 'web_fetch', arguments: { url } })
const signal = () => new AbortController().signal

describe('web_fetch through the tool pipeline', () => {
  it('returns the page as text with its URL, status and title', async () => {
    await using server = await startServer()
    const root = await boot(['127.0.0.1'])
    const result = await root.tools.executeCall(fetchCall(`${server.origin}/html`), { signal: signal() })
    expect(result.isError).toBe(false)
    const text = result.content[0]?.type === 'text' ? result.content[0].text : ''
    expect(text).toMatch(
      new RegExp(
        `^URL: ${server.origin}/html\nStatus: 200\nContent-Type: text/html; charset=utf-8\nTitle: The Title\n\n# Heading`,
      ),
    )
    const missing = await root.tools.executeCall(fetchCall(`${server.origin}/missing`), { signal: signal() })
    expect(missing.isError).toBe(true)
  })

  it('turns a refusal into an error result with the WEB_* code, without the allowlist', async () => {
    await using server = await startServer()
    const root = await boot()
    const result = await root.tools.executeCall(fetchCall(`${server.origin}/text`), { signal: signal() })
    expect(result).toMatchObject({ isError: true, errorCode: 'WEB_BLOCKED_ADDRESS' })
    expect(server.seen).toEqual([])
  })

  it('picks the only provider, or the named one, never by registration order', async () => {
    const root = await boot()
    expect(root.webFetch.providers()).toEqual(['http'])
    root.webFetch.registerFetcher({ name: 'other', fetch: async () => Promise.reject(new Error('unused')) })
    await expect(root.webFetch.fetch({ url: 'http://example.com/' })).rejects.toMatchObject({
      code: 'WEB_PROVIDER_AMBIGUOUS',
    })
    await expect(root.webFetch.fetch({ url: 'http://example.com/', provider: 'nope' })).rejects.toMatchObject({
      code: 'WEB_UNKNOWN_PROVIDER',
    })
    expect(() =>
      root.webFetch.registerFetcher({ name: 'http', fetch: async () => Promise.reject(new Error('x')) }),
    ).toThrow(expect.objectContaining({ code: 'DUPLICATE_WEB_PROVIDER' }))
  })
})
