// Browser-side plugins in Chromium: the example plugin's renderer and settings section appear only
// while its row is enabled, come and go with live edits of the patch file (`--watch-config`) in the
// open page without a reload or a page error, and broken client modules show their errors in place.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { launchChromium, shots, startWeb, type WebProcess } from './support'

const broken = fileURLToPath(new URL('./fixtures/broken-client.mjs', import.meta.url))
let home: string
let patch: string
let server: MockLlmServer
let web: WebProcess
let browser: Browser
let page: Page
const pageErrors: string[] = []

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-plugins-'))
  patch = join(home, 'live.yml')
  writeFileSync(patch, '')
  server = await startMockLlmServer()
  web = await startWeb({
    args: ['--watch-config', '--patch', patch],
    cwd: home,
    env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
  })
  browser = await launchChromium()
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
  page.on('pageerror', (error) => pageErrors.push(error.message))
  await page.goto(web.url)
})

afterAll(async () => {
  await browser?.close()
  await web?.stop()
  await server?.close()
  rmSync(home, { recursive: true, force: true })
})

const table = (id: string, title: string) =>
  completionResponse({
    toolCalls: [
      {
        id,
        name: 'show_table',
        arguments: JSON.stringify({
          title,
          columns: ['planet', 'moons'],
          rows: [
            ['Mars', '2'],
            ['Earth', '1'],
          ],
        }),
      },
    ],
  })

it('shows the example renderer only while its row is enabled, and drops it on a live edit', async () => {
  await page.click('#new-session')
  await page.waitForURL(/#\/s\//)
  const session = page.url()
  await web.waitForStderr(/dsh: watching .*live\.yml/)

  // Row disabled (the bundle's default): the call gets the generic card (and the tool is unknown).
  server.enqueue(table('call_1', 'Before'), completionResponse({ text: 'First table done.' }))
  await page.fill('textarea[aria-label=message]', 'Show a table')
  await page.click('button.send')
  await page.locator('.node.assistant', { hasText: 'First table done.' }).waitFor()
  const card = page.locator('.node.tool[data-tool=show_table]').first()
  await card.locator('pre.args').waitFor()
  expect(await page.locator('figure.example-table').count()).toBe(0)
  await page.evaluate(() => {
    ;(globalThis as unknown as { stillHere: boolean }).stillHere = true
  })

  // Enable the row by editing the patch: the open page loads the module and redraws the card.
  writeFileSync(patch, '- id: web-plugin-example\n')
  await web.waitForStderr(/reconfigured: \+\[web-plugin-example\]/)
  await card.locator('figure.example-table figcaption', { hasText: 'Before' }).waitFor()
  expect(await card.locator('pre.args').count()).toBe(0)
  server.enqueue(table('call_2', 'After'), completionResponse({ text: 'Second table done.' }))
  await page.fill('textarea[aria-label=message]', 'Another table')
  await page.click('button.send')
  await page.locator('.node.assistant', { hasText: 'Second table done.' }).waitFor()
  const second = page.locator('.node.tool[data-tool=show_table]').nth(1)
  await expect(second.locator('tbody td').allTextContents()).resolves.toEqual(['Mars', '2', 'Earth', '1'])
  await expect(second.locator('.tool-status').textContent()).resolves.toBe('done')
  await page.screenshot({ path: join(shots, 'plugins-01-renderer.png') })
  await page.goto(`${new URL(web.url).origin}/#/settings`)
  await page.locator('.settings-section[data-section=web-plugin-example] input[type=checkbox]').waitFor()
  await page.goto(session)
  await page.locator('figure.example-table').first().waitFor()

  // Disable it again: renderer and section leave the open page; no reload, no page error.
  writeFileSync(patch, '')
  await web.waitForStderr(/reconfigured: .*-\[web-plugin-example\]/)
  await page.locator('figure.example-table').first().waitFor({ state: 'detached' })
  expect(await page.locator('.node.tool[data-tool=show_table] pre.args').count()).toBe(2)
  expect(await page.evaluate(() => (globalThis as unknown as { stillHere?: boolean }).stillHere)).toBe(true)
  await page.goto(`${new URL(web.url).origin}/#/settings`)
  await page.locator('.settings h2').first().waitFor()
  expect(await page.locator('.settings-section[data-section=web-plugin-example]').count()).toBe(0)
  expect(pageErrors).toEqual([])
})

it('shows a broken client module’s error in its slot and keeps the page working', async () => {
  writeFileSync(patch, `- id: e2e-broken-client\n  use: ${JSON.stringify(broken)}\n`)
  await web.waitForStderr(/reconfigured: \+\[e2e-broken-client\]/)
  await page.locator('.slot-error[data-owner=e2e-invalid]').waitFor()
  await page.goto(`${new URL(web.url).origin}/#/`)
  await page.locator('.sessions a').first().click()
  await page.locator('.session-head .slot-error[data-owner=e2e-throwing]', { hasText: 'badge exploded' }).waitFor()
  // The conversation still renders and the composer still sends.
  await page.locator('.node.assistant', { hasText: 'Second table done.' }).waitFor()
  server.enqueue(completionResponse({ text: 'Still working.' }))
  await page.fill('textarea[aria-label=message]', 'Are you fine?')
  await page.click('button.send')
  await page.locator('.node.assistant', { hasText: 'Still working.' }).waitFor()
  await page.screenshot({ path: join(shots, 'plugins-02-broken.png') })
})
