// web_search as `dsh run` users get it: the base bundle's rows, the `webSearch` setting selecting the
// searxng provider at a local server that speaks SearXNG's JSON API, and the mock model calling the tool.
// The durable session log shows the call and its results; without the setting the tool is not offered.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
let model: MockLlmServer
let searx: Server
let searxOrigin: string
const queries: string[] = []

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-search-home-'))
  model = await startMockLlmServer()
  queries.length = 0
  searx = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    queries.push(`${url.pathname}?${url.searchParams}`)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(
      JSON.stringify({
        query: url.searchParams.get('q'),
        number_of_results: 3,
        results: [
          { url: 'https://cordis.example/docs', title: 'Cordis docs', content: 'The meta framework', engine: 'ddg' },
          { url: 'http://192.168.1.5/admin', title: 'router', content: 'private', engine: 'ddg' },
          { url: 'https://dsh.example/', title: 'dsh', content: 'An agent runtime', engine: 'bing' },
        ],
        answers: [],
        suggestions: [],
      }),
    )
  })
  await new Promise<void>((done) => searx.listen(0, '127.0.0.1', done))
  searxOrigin = `http://127.0.0.1:${(searx.address() as AddressInfo).port}`
})

afterEach(async () => {
  await model.close()
  searx.closeAllConnections()
  await new Promise<void>((done) => searx.close(() => done()))
  rmSync(home, { recursive: true, force: true })
})

/** Tool names offered in the model request at `index`. */
function offered(index: number): string[] {
  const tools = (model.requests[index]?.body.tools ?? []) as Array<{ function?: { name?: string } }>
  return tools.map((tool) => tool.function?.name ?? '')
}

describe('web_search through dsh run', () => {
  it('the setting selects searxng; the results come back in the durable log, private hits left out', async () => {
    writeFileSync(
      join(home, 'settings.yaml'),
      `webSearch:\n  provider: searxng\n  searxng:\n    baseUrl: ${searxOrigin}\n`,
    )
    model.enqueue(
      completionResponse({
        toolCalls: [{ id: 's1', name: 'web_search', arguments: JSON.stringify({ query: 'cordis framework' }) }],
      }),
      completionResponse({ text: 'found it' }),
    )
    const result = await runDsh(['run', 'search the web'], { home, modelUrl: model.url })
    expect(result.code, result.stderr).toBe(0)
    expect(offered(0)).toContain('web_search')
    expect(queries).toEqual(['/search?q=cordis+framework&format=json'])
    const events = durableEvents(home)
    // The query is in the logged call; the provider and the hits in the logged result.
    expect(eventData(events, 'tool/call').map((data) => [data.call.name, data.call.arguments])).toEqual([
      ['web_search', { query: 'cordis framework' }],
    ])
    const [logged] = eventData(events, 'tool/result')
    expect(logged?.message.isError).toBe(false)
    const text = logged?.message.content.map((part) => (part.type === 'text' ? part.text : '')).join('') ?? ''
    expect(text).toMatch(/^Search results for "cordis framework" \(searxng\):/)
    expect(text).toContain('1. Cordis docs\n   https://cordis.example/docs\n   The meta framework')
    expect(text).toContain('2. dsh\n   https://dsh.example/\n   An agent runtime')
    expect(text).toContain('[1 result on private or local addresses left out]')
    expect(text).not.toContain('192.168')
  })

  it('without a selected provider web_search is not offered', async () => {
    model.enqueue(completionResponse({ text: 'no search here' }))
    const result = await runDsh(['run', 'hello'], { home, modelUrl: model.url })
    expect(result.code, result.stderr).toBe(0)
    expect(offered(0)).toContain('web_fetch')
    expect(offered(0)).not.toContain('web_search')
  })

  it('dsh doctor says why a chosen provider is not there, and which one serves web_search', async () => {
    writeFileSync(join(home, 'settings.yaml'), 'webSearch:\n  provider: brave\n')
    const missing = await runDsh(['doctor'], { home, modelUrl: model.url, env: { BRAVE_API_KEY: undefined } })
    expect(missing.code).toBe(ExitCode.CONFIG)
    expect(missing.stdout).toMatch(
      /FAIL {2}web search {3}web search provider "brave" is not registered .*no BRAVE_API_KEY credential/,
    )
    const keyed = await runDsh(['doctor'], { home, modelUrl: model.url, env: { BRAVE_API_KEY: 'bk-test' } })
    expect(keyed.stdout).toContain('ok    web search   web_search through brave')
  })
})
