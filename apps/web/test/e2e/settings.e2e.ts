// The settings page in Chromium against its own `dsh web` and mock model server: an OpenAI-compatible
// endpoint added from the page, its models (from the mock's /v1/models) offered by the default-model
// picker, the default switched, and the next session's request going to that endpoint with that model.
// The default preset is switched the same way. Outcomes: the mock's recorded requests, settings.yaml.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, type MockResponse, startMockLlmServer } from '@dsh/test-support'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, loggedEvents, shots, startWeb, type WebProcess } from './support'

let home: string
let work: string
let server: MockLlmServer
/** Chat answers; the model list is answered by path. */
const chat: MockResponse[] = []
let host: WebProcess
let browser: Browser
let page: Page

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-settings-'))
  work = join(home, 'work')
  mkdirSync(work)
  mkdirSync(shots, { recursive: true })
  server = await startMockLlmServer({
    respond: (request) =>
      request.path === '/v1/models'
        ? { type: 'json', status: 200, body: { object: 'list', data: [{ id: 'qwen-e2e', max_model_len: 32768 }] } }
        : chat.shift(),
  })
  host = await startWeb({
    cwd: work,
    env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
  })
  browser = await launchChromium()
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
})

afterAll(async () => {
  await browser?.close()
  await host?.stop()
  await server?.close()
  rmSync(home, { recursive: true, force: true })
})

const settingsFile = () => readFileSync(join(home, 'settings.yaml'), 'utf8')

describe('the settings page', () => {
  it('adds an endpoint, switches the default model to one of its models, and the next request uses it', async () => {
    await page.goto(`${host.url}#/settings`)
    await page.locator('.providers tr[data-provider=deepseek].configured').waitFor()
    expect(await page.locator('#default-model').inputValue()).toBe('deepseek:deepseek-v4-pro')

    await page.fill('input[aria-label="endpoint name"]', 'local')
    await page.fill('input[aria-label="endpoint base URL"]', `${server.url}/v1`)
    await page.click('.add-endpoint button[type=submit]')
    await page.locator('.endpoints tr[data-endpoint=local]').waitFor()
    expect(settingsFile()).toContain(`baseUrl: ${server.url}/v1`)

    // The picker offers the endpoint's models, listed from its /v1/models.
    await expect
      .poll(() => page.locator('#default-model option').allTextContents())
      .toContain('openai-compatible:local/qwen-e2e')
    await page.selectOption('#default-model', 'openai-compatible:local/qwen-e2e')
    await page.click('#save-default-model')
    await page.locator('.settings .note', { hasText: 'default model: openai-compatible:local/qwen-e2e' }).waitFor()
    expect(settingsFile()).toContain('model: openai-compatible:local/qwen-e2e')
    await page.locator('.all-settings tr[data-setting=model] .source', { hasText: 'user' }).waitFor()
    await page.screenshot({ path: join(shots, '20-settings-models.png'), fullPage: true })

    chat.push(completionResponse({ text: 'Answered by the endpoint.' }))
    await page.click('#new-session')
    await page.waitForURL(/#\/s\//)
    await page.fill('textarea[aria-label=message]', 'Which model are you?')
    await page.click('button.send')
    await page.locator('.node.assistant', { hasText: 'Answered by the endpoint.' }).waitFor()
    const chats = server.requests.filter((request) => request.path.endsWith('/chat/completions'))
    expect(chats).toHaveLength(1)
    expect(chats[0]?.path).toBe('/v1/chat/completions')
    expect(chats[0]?.body.model).toBe('qwen-e2e')
  })

  it('suggests the listed models in the session header', async () => {
    const suggested = await page
      .locator('#model-choices option')
      .evaluateAll((options) => options.map((option) => (option as unknown as { value: string }).value))
    expect(suggested).toContain('openai-compatible:local/qwen-e2e')
    expect(suggested).toContain('deepseek:deepseek-v4-pro')
  })

  it('switches the default preset: a new session from the form runs with it', async () => {
    await page.goto(`${host.url}#/settings`)
    await page.locator('#default-preset').waitFor()
    await page.selectOption('#default-preset', 'ask')
    await page.locator('.settings .note', { hasText: 'default preset: ask' }).waitFor()
    expect(settingsFile()).toContain('preset: ask')
    expect(await page.locator('#new-session-preset').inputValue()).toBe('ask')
    const before = page.url()
    await page.click('#new-session')
    await page.waitForURL((url) => url.href !== before && /#\/s\//.test(url.hash))
    await page.locator('.session-head .preset[data-preset=ask]').waitFor()
    const id = /#\/s\/(.+)$/.exec(page.url())?.[1] as string
    await expect
      .poll(() =>
        loggedEvents(home, id)
          .filter((event) => event.type === 'preset/selected')
          .map((event) => event.data),
      )
      .toEqual([{ name: 'ask', by: 'default', origin: 'shipped' }])
  })

  it('removes the endpoint again', async () => {
    await page.goto(`${host.url}#/settings`)
    await page.locator('.endpoints tr[data-endpoint=local] button.remove').click()
    await page.locator('.endpoints tr[data-endpoint=local]').waitFor({ state: 'detached' })
    expect(settingsFile()).not.toContain('baseUrl')
  })
})
