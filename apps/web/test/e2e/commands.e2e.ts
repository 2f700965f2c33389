// Slash commands on the web page (issue 31): an unknown /word is answered and sends nothing (also as
// steering while a turn runs), and the model picked in the header is logged, survives a host restart,
// and is what the next request uses.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, loggedEvents, newSession, startWeb, type WebProcess } from './support'

let home: string
let work: string
let server: MockLlmServer
let browser: Browser
let web: WebProcess | undefined
let page: Page
let sessionId = ''

const start = () =>
  startWeb({ cwd: work, env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url } })

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-e2e-commands-'))
  work = join(home, 'work')
  mkdirSync(work)
  server = await startMockLlmServer()
  web = await start()
  browser = await launchChromium()
  page = await browser.newPage()
})

afterAll(async () => {
  await browser?.close()
  await web?.stop()
  await server?.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

async function send(text: string): Promise<void> {
  await page.fill('textarea[aria-label=message]', text)
  await page.press('textarea[aria-label=message]', 'Enter')
}

const typed = () =>
  loggedEvents(home, sessionId).flatMap((event) =>
    event.type === 'user/message' && !event.data.origin ? [JSON.stringify(event.data.message)] : [],
  )

describe('slash commands on the web page', () => {
  it('answers an unknown /word without sending it, also while a turn runs; // sends a literal slash', async () => {
    sessionId = await newSession(page, web?.url as string, work)
    await send('/bogus')
    await page.locator('.command-output', { hasText: 'unknown command /bogus (see /help)' }).waitFor()
    server.enqueue(
      completionResponse({ toolCalls: [{ id: 'c1', name: 'bash', arguments: '{"command":"sleep 2"}' }] }),
      completionResponse({ text: 'Slept.' }),
      completionResponse({ text: 'Literal heard.' }),
    )
    await send('start it')
    await page.locator('button.steer').waitFor()
    await send('/steerme')
    await page.locator('.command-output', { hasText: 'unknown command /steerme' }).waitFor()
    await page.locator('.node.assistant', { hasText: 'Slept.' }).waitFor()
    await send('//tmp is full')
    await page.locator('.node.assistant', { hasText: 'Literal heard.' }).waitFor()
    const sent = JSON.stringify(server.requests.map((request) => request.body.messages))
    expect(sent).not.toContain('bogus')
    expect(sent).not.toContain('steerme')
    expect(typed()).toHaveLength(2)
    expect(typed()[1]).toContain('"/tmp is full"')
  })

  it('keeps the picked model across a host restart: the header shows it and the next request uses it', async () => {
    await page.fill('input[aria-label=model]', 'deepseek:deepseek-v4-flash')
    await page.press('input[aria-label=model]', 'Enter')
    await page.locator('.command-output', { hasText: 'deepseek:deepseek-v4-flash (from the next request)' }).waitFor()
    await page.fill('input[aria-label=model]', 'foo:bar')
    await page.press('input[aria-label=model]', 'Enter')
    await page.locator('.command-output', { hasText: 'no provider "foo"' }).waitFor()
    await web?.stop()
    web = await start()
    await page.goto(`${web.url}#/s/${sessionId}`)
    await page.locator('input[aria-label=model][placeholder="deepseek:deepseek-v4-flash"]').waitFor()
    server.enqueue(completionResponse({ text: 'After the restart.' }))
    await send('once more')
    await page.locator('.node.assistant', { hasText: 'After the restart.' }).waitFor()
    expect(server.requests.at(-1)?.body.model).toBe('deepseek-v4-flash')
  })

  it("/status names the session, /exit says it is the terminal's, /new opens a fresh session and keeps the old one", async () => {
    await send('/status')
    await page.locator('.command-output', { hasText: `session: ${sessionId}` }).waitFor()
    expect(await page.locator('.command-output').textContent()).toContain(`workspace: ${work}`)
    await send('/exit')
    await page.locator('.command-output', { hasText: '/exit does not apply on the web page' }).waitFor()
    await send('/new')
    await page.waitForURL((url) => /#\/s\//.test(url.hash) && !url.hash.endsWith(sessionId))
    const fresh = /#\/s\/(.+)$/.exec(page.url())?.[1] as string
    await page.locator(`a[data-session="${sessionId}"]`).waitFor()
    server.enqueue(completionResponse({ text: 'Fresh answer.' }))
    await send('in the new one')
    await page.locator('.node.assistant', { hasText: 'Fresh answer.' }).waitFor()
    expect(JSON.stringify(server.requests.at(-1)?.body.messages)).not.toContain('once more')
    expect(loggedEvents(home, fresh).some((event) => event.type === 'user/message')).toBe(true)
    expect(typed()).toHaveLength(3)
  })
})
