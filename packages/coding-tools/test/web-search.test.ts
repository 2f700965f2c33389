// web_search through the tool pipeline against a local server that speaks each provider's real API:
// SearXNG (GET /search?format=json), Brave (GET /res/v1/web/search, X-Subscription-Token), Tavily
// (POST /search, Bearer), Exa (POST /search, x-api-key). No network, no real API.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ToolsService } from '@dsh/agent/tools'
import { Context } from '@dsh/kernel'
import SettingsService from '@dsh/settings'
import CredentialsService from '@dsh/settings/credentials'
import { afterEach, describe, expect, it } from 'vitest'
import Brave from '../src/web-search/brave.js'
import Exa from '../src/web-search/exa.js'
import WebSearchService from '../src/web-search/index.js'
import Searxng from '../src/web-search/searxng.js'
import Tavily from '../src/web-search/tavily.js'
import WebSearchTool, { isShownUrl } from '../src/web-search/tool.js'

interface Seen {
  method: string
  path: string
  query: Record<string, string>
  headers: IncomingMessage['headers']
  body: unknown
}

type Handler = (req: Seen, res: ServerResponse) => void

async function startServer(handler: Handler) {
  const seen: Seen[] = []
  const open = new Set<ServerResponse>()
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x')
      const text = Buffer.concat(chunks).toString('utf8')
      const entry: Seen = {
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      }
      seen.push(entry)
      open.add(res)
      res.on('close', () => open.delete(res))
      handler(entry, res)
    })
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    seen,
    async [Symbol.asyncDispose]() {
      for (const res of open) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((done) => server.close(() => done()))
    },
  }
}

const json = (res: ServerResponse, value: unknown, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(value))
}

const KEYS = { BRAVE_API_KEY: 'brave-key', TAVILY_API_KEY: 'tvly-key', EXA_API_KEY: 'exa-key' }

type Row = typeof Searxng
async function boot(row: Row | undefined, config: Record<string, unknown> = {}, env: Record<string, string> = KEYS) {
  const root = new Context()
  const warnings: string[] = []
  root.plugin(ToolsService)
  root.plugin(CredentialsService, { env, home: mkdtempSync(join(tmpdir(), 'dsh-ws-creds-')), cwd: tmpdir() })
  root.logger.exporter({
    export: (message) => {
      if (message.type === 'warn') warnings.push(message.args.map(String).join(' '))
    },
  })
  await root.plugin(WebSearchService)
  if (row) await root.plugin(row, { enabled: true, ...config })
  await root.plugin(WebSearchTool)
  return { root, warnings }
}

const call = (query: string, count?: number) => ({
  type: 'tool-call' as const,
  id: 'c1',
  name: 'web_search',
  arguments: count === undefined ? { query } : { query, count },
})
const signal = () => new AbortController().signal
const textOf = (result: { content: readonly { type: string; text?: string }[] }) =>
  result.content[0]?.type === 'text' ? (result.content[0].text ?? '') : ''

describe('web search providers speak their real APIs', () => {
  it('searxng: GET /search?q&format=json, results[].content as the snippet, no key', async () => {
    await using server = await startServer((_req, res) =>
      json(res, {
        query: 'dsh agent',
        number_of_results: 2,
        results: [
          { url: 'https://example.com/a', title: 'A  page', content: 'About <b>A</b> &amp; more', engine: 'ddg' },
          { url: 'https://example.org/b', title: 'B', content: '', engine: 'bing' },
        ],
        answers: [],
        suggestions: [],
      }),
    )
    const { root } = await boot(Searxng, { baseUrl: `${server.origin}/` })
    const result = await root.tools.executeCall(call('dsh agent'), { signal: signal() })
    expect(result.isError).toBe(false)
    expect(server.seen[0]).toMatchObject({ method: 'GET', path: '/search', query: { q: 'dsh agent', format: 'json' } })
    expect(textOf(result)).toBe(
      'Search results for "dsh agent" (searxng):\n\n1. A page\n   https://example.com/a\n   About A & more\n\n2. B\n   https://example.org/b',
    )
    expect(result.details).toMatchObject({ provider: 'searxng', query: 'dsh agent', count: 2, dropped: 0 })
  })

  it('brave: GET /res/v1/web/search?q&count with X-Subscription-Token, web.results[].description', async () => {
    await using server = await startServer((_req, res) =>
      json(res, {
        type: 'search',
        query: { original: 'cordis' },
        web: {
          type: 'search',
          results: [
            { title: 'Cordis', url: 'https://cordis.io/', description: 'Meta <strong>framework</strong>', age: '1d' },
          ],
        },
      }),
    )
    const { root } = await boot(Brave, { baseUrl: server.origin })
    const result = await root.tools.executeCall(call('cordis', 3), { signal: signal() })
    expect(result.isError).toBe(false)
    expect(server.seen[0]).toMatchObject({
      method: 'GET',
      path: '/res/v1/web/search',
      query: { q: 'cordis', count: '3' },
    })
    expect(server.seen[0]?.headers['x-subscription-token']).toBe('brave-key')
    expect(textOf(result)).toContain('1. Cordis\n   https://cordis.io/\n   Meta framework')
  })

  it('tavily: POST /search { query, max_results } with Bearer, results[].content', async () => {
    await using server = await startServer((_req, res) =>
      json(res, {
        query: 'vitest',
        answer: null,
        images: [],
        results: [{ title: 'Vitest', url: 'https://vitest.dev/', content: 'Next generation testing', score: 0.9 }],
        response_time: 0.5,
      }),
    )
    const { root } = await boot(Tavily, { baseUrl: server.origin, count: 4 })
    const result = await root.tools.executeCall(call('vitest'), { signal: signal() })
    expect(result.isError).toBe(false)
    expect(server.seen[0]).toMatchObject({ method: 'POST', path: '/search' })
    expect(server.seen[0]?.headers.authorization).toBe('Bearer tvly-key')
    expect(server.seen[0]?.body).toMatchObject({ query: 'vitest', max_results: 4 })
    expect(textOf(result)).toContain('1. Vitest\n   https://vitest.dev/\n   Next generation testing')
  })

  it('exa: POST /search { query, numResults, contents.text } with x-api-key, highlights or text', async () => {
    await using server = await startServer((_req, res) =>
      json(res, {
        requestId: 'r1',
        results: [
          {
            id: 'u1',
            title: 'Exa one',
            url: 'https://exa.ai/1',
            text: 'Full text of one',
            highlights: ['the best bit'],
          },
          { id: 'u2', title: 'Exa two', url: 'https://exa.ai/2', text: 'Text of two' },
        ],
      }),
    )
    const { root } = await boot(Exa, { baseUrl: server.origin })
    const result = await root.tools.executeCall(call('exa', 2), { signal: signal() })
    expect(result.isError).toBe(false)
    expect(server.seen[0]).toMatchObject({ method: 'POST', path: '/search' })
    expect(server.seen[0]?.headers['x-api-key']).toBe('exa-key')
    expect(server.seen[0]?.body).toMatchObject({ query: 'exa', numResults: 2, contents: { text: {} } })
    expect(textOf(result)).toContain(
      '1. Exa one\n   https://exa.ai/1\n   the best bit\n\n2. Exa two\n   https://exa.ai/2\n   Text of two',
    )
  })
})

describe('web search failures name the provider', () => {
  it('an HTTP 500 is an error result naming the provider', async () => {
    await using server = await startServer((_req, res) => json(res, { error: 'boom' }, 500))
    const { root } = await boot(Brave, { baseUrl: server.origin })
    const result = await root.tools.executeCall(call('x'), { signal: signal() })
    expect(result).toMatchObject({ isError: true, errorCode: 'WEB_SEARCH_FAILED' })
    expect(textOf(result)).toContain('web search provider "brave" failed: HTTP 500')
  })

  it('an answer that is not JSON is an error naming the provider', async () => {
    await using server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<html>nope</html>')
    })
    const { root } = await boot(Searxng, { baseUrl: server.origin })
    const result = await root.tools.executeCall(call('x'), { signal: signal() })
    expect(result).toMatchObject({ isError: true, errorCode: 'WEB_SEARCH_FAILED' })
    expect(textOf(result)).toContain('web search provider "searxng" failed: the answer is not JSON')
  })

  it('a provider that never answers times out within the bound, naming the provider', async () => {
    await using server = await startServer(() => {}) // never answers
    const { root } = await boot(Tavily, { baseUrl: server.origin, timeoutMs: 200 })
    const started = Date.now()
    const result = await root.tools.executeCall(call('slow'), { signal: signal() })
    const took = Date.now() - started
    expect(result).toMatchObject({ isError: true, errorCode: 'WEB_SEARCH_TIMEOUT' })
    expect(textOf(result)).toContain('web search provider "tavily" did not answer within 200 ms')
    expect(took).toBeLessThan(2000)
  })

  it('a provider that ignores its signal still cannot hang the call', async () => {
    const root = new Context()
    await root.plugin(WebSearchService, { timeoutMs: 100 })
    root.webSearch.registerProvider({ name: 'stuck', search: () => new Promise(() => {}) })
    await expect(root.webSearch.search({ query: 'x' })).rejects.toMatchObject({
      code: 'WEB_SEARCH_TIMEOUT',
      message: expect.stringContaining('"stuck"'),
    })
  })
})

describe('what the model sees', () => {
  it('drops hits on private or local addresses and says how many', async () => {
    await using server = await startServer((_req, res) =>
      json(res, {
        results: [
          { url: 'http://192.168.1.5/x', title: 'router', content: 'admin' },
          { url: 'https://public.example/', title: 'public', content: 'ok' },
          { url: 'http://localhost/y', title: 'local', content: 'dev' },
          { url: 'http://[::1]:8080/', title: 'v6 loopback', content: '' },
          { url: 'file:///etc/passwd', title: 'file', content: '' },
        ],
      }),
    )
    const { root } = await boot(Searxng, { baseUrl: server.origin })
    const result = await root.tools.executeCall(call('x', 10), { signal: signal() })
    expect(result.isError).toBe(false)
    const text = textOf(result)
    expect(text).toContain('1. public\n   https://public.example/')
    expect(text).not.toMatch(/192\.168|localhost|::1|passwd/)
    expect(text).toContain('[4 results on private or local addresses left out]')
    expect(result.details).toMatchObject({ count: 1, dropped: 4 })
  })

  it('isShownUrl: public names and IPs only', () => {
    expect(isShownUrl('https://example.com/a')).toBe(true)
    expect(isShownUrl('http://8.8.8.8/')).toBe(true)
    for (const url of [
      'http://10.0.0.1/',
      'http://127.0.0.1/',
      'http://printer.local/',
      'http://intranet/',
      'ftp://x.com/',
    ])
      expect(isShownUrl(url), url).toBe(false)
  })
})

describe('no provider, no tool', () => {
  it('web_search is not registered without a provider, and comes and goes with one', async () => {
    const { root } = await boot(undefined)
    expect(root.tools.list().map((tool) => tool.name)).not.toContain('web_search')
    const off = root.webSearch.registerProvider({ name: 'fake', search: async () => [] })
    expect(root.tools.list().map((tool) => tool.name)).toContain('web_search')
    off()
    expect(root.tools.list().map((tool) => tool.name)).not.toContain('web_search')
  })

  it('a keyed provider without its key does not register and says why', async () => {
    const { root, warnings } = await boot(Brave, {}, {})
    expect(root.webSearch.providers()).toEqual([])
    expect(root.tools.list().map((tool) => tool.name)).not.toContain('web_search')
    expect(warnings.join('\n')).toMatch(/web search provider "brave" is not registered.*no BRAVE_API_KEY/)
  })

  it('searxng without a base URL does not register and says why', async () => {
    const { root, warnings } = await boot(Searxng)
    expect(root.webSearch.providers()).toEqual([])
    expect(warnings.join('\n')).toMatch(/"searxng" is not registered.*base URL/)
  })
})

describe('the webSearch setting selects the provider', () => {
  const dirs: string[] = []
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  it('only the selected row registers; changing the setting swaps it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-ws-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-ws-cwd-'))
    dirs.push(home, cwd)
    writeFileSync(
      join(home, 'settings.yaml'),
      'webSearch:\n  provider: searxng\n  searxng:\n    baseUrl: http://127.0.0.1:9\n',
    )
    const root = new Context()
    root.plugin(ToolsService)
    root.plugin(SettingsService, { home, cwd, env: {} })
    root.plugin(CredentialsService, { env: KEYS, home, cwd })
    root.plugin(WebSearchService)
    await root.plugin(Searxng)
    await root.plugin(Brave)
    await root.plugin(WebSearchTool)
    expect(root.webSearch.providers()).toEqual(['searxng'])
    expect(root.tools.list().map((tool) => tool.name)).toContain('web_search')
    await root.settings.set('webSearch.provider', 'brave')
    await new Promise((done) => setTimeout(done, 50))
    expect(root.webSearch.providers()).toEqual(['brave'])
  })
})
