// Share a session as one HTML file (issue 39): `dsh sessions export ID --format html` writes a page
// that renders the transcript as `dsh web` does, opened from disk in Chromium with every network
// request refused; `--no-tool-output` leaves the tool outputs out of the file.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { launchChromium, repo } from './support'

const run = promisify(execFile)
const bin = join(repo, 'apps/cli/bin/dsh.js')
let home: string
let work: string
let server: MockLlmServer
let browser: Browser

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-e2e-html-'))
  work = join(home, 'work')
  mkdirSync(work)
  writeFileSync(join(work, 'plan.txt'), 'ship the secret-free plan\n')
  server = await startMockLlmServer()
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  await server?.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

const env = () => ({ ...process.env, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url })

it('renders the exported transcript from disk with no network, and can leave tool outputs out', async () => {
  server.enqueue(
    completionResponse({ toolCalls: [{ id: 'r1', name: 'read', arguments: JSON.stringify({ path: 'plan.txt' }) }] }),
    completionResponse({ text: 'The plan is **short**:\n\n- ship it\n' }),
  )
  const recorded = await run(process.execPath, [bin, 'run', '--output', 'json', 'what is the plan?'], {
    cwd: work,
    env: env(),
  })
  const id = JSON.parse(recorded.stdout).sessionId as string
  const file = join(home, 'share.html')
  const exported = await run(process.execPath, [bin, 'sessions', 'export', id, '--format', 'html'], {
    cwd: work,
    env: env(),
    maxBuffer: 64 * 1024 * 1024,
  })
  writeFileSync(file, exported.stdout)
  expect(statSync(file).size).toBeLessThan(2_000_000)
  expect(exported.stdout).toContain('ship the secret-free plan')

  const page = await browser.newPage()
  const requests: string[] = []
  await page.route('**/*', (route) => {
    if (!route.request().url().startsWith('file:')) requests.push(route.request().url())
    return route.request().url().startsWith('file:') ? route.continue() : route.abort()
  })
  await page.goto(`file://${file}`)
  await page.locator('.node.user', { hasText: 'what is the plan?' }).waitFor()
  // Markdown rendered as the live page renders it, and the tool call's card.
  await page.locator('.node.assistant strong', { hasText: 'short' }).waitFor()
  expect(await page.locator('.node.assistant li').textContent()).toBe('ship it')
  expect(await page.locator('body').textContent()).toContain('plan.txt')
  expect(await page.locator('.exported-note').textContent()).toContain(`session ${id.slice(0, 8)}`)
  expect(await page.locator('textarea').count()).toBe(0)
  expect(requests).toEqual([])
  await page.close()

  const trimmed = await run(process.execPath, [bin, 'sessions', 'export', id, '--format', 'html', '--no-tool-output'], {
    cwd: work,
    env: env(),
    maxBuffer: 64 * 1024 * 1024,
  })
  expect(trimmed.stdout).not.toContain('ship the secret-free plan')
  expect(trimmed.stdout).toContain('tool output left out of this export')
})
