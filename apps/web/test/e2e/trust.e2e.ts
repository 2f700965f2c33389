// `dsh web` opened in a checkout whose `.mcp.json` would start a command: the server does not start,
// the page names what the folder would enable, and "Trust this folder" records the trust (by content
// hash) so the next start loads it.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { launchChromium, startWeb, type WebProcess } from './support.js'

let home: string
let checkout: string
let browser: Browser
const web: WebProcess[] = []
const marker = () => join(home, 'mcp-started')
const env = () => ({ DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9' })

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-trust-'))
  checkout = join(home, 'checkout')
  mkdirSync(checkout)
  const script = `require('fs').writeFileSync(${JSON.stringify(marker())}, 'x')`
  writeFileSync(
    join(checkout, '.mcp.json'),
    JSON.stringify({ mcpServers: { local: { command: process.execPath, args: ['-e', script] } } }),
  )
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  for (const process of web) await process.stop()
  rmSync(home, { recursive: true, force: true })
})

it('shows the untrusted .mcp.json, starts nothing, and trusts the folder from the banner', async () => {
  const first = await startWeb({ cwd: checkout, env: env() })
  web.push(first)
  const page = await browser.newPage({ viewport: { width: 1280, height: 700 } })
  await page.goto(first.url)
  const banner = page.locator('.trust-banner')
  await banner.waitFor()
  expect(await banner.textContent()).toContain('.mcp.json')
  expect(existsSync(marker())).toBe(false)
  await page.click('.trust-banner button')
  // The granted banner (role=status): a text match on "Trusted" would also match the pending banner's
  // "not trusted" (Playwright's hasText ignores case) and race the grant's write.
  await page.locator('.trust-banner[role="status"]').waitFor()
  const recorded = JSON.parse(readFileSync(join(home, 'trust.json'), 'utf8'))
  expect(Object.values(recorded.folders).map((folder) => Object.keys((folder as { items: object }).items))).toEqual([
    ['.mcp.json'],
  ])
  await first.stop()

  // The next start loads what was trusted: the server's command runs, and no banner shows.
  const second = await startWeb({ cwd: checkout, env: env() })
  web.push(second)
  const started = Date.now()
  while (!existsSync(marker()) && Date.now() - started < 20_000) await new Promise((done) => setTimeout(done, 50))
  expect(existsSync(marker())).toBe(true)
  const status = page.waitForResponse((response) => response.url().includes('/api/trust'))
  await page.goto(second.url)
  expect(await (await status).json()).toMatchObject({ items: [{ path: '.mcp.json', admitted: true }] })
  expect(await page.locator('.trust-banner').count()).toBe(0)
}, 90_000)
