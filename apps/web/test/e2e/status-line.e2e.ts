// The user's status line in the web header (issue 33): `statusline.command` (set with `dsh config
// set`, as a user does) reads the session's state as JSON on stdin; its first line shows in the open
// session's header, updated after each answer, and a failing command says it failed.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { completionResponse, deepseekUsage, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { launchChromium, newSession, repo, startWeb, type WebProcess } from './support'

const run = promisify(execFile)
let home: string
let work: string
let server: MockLlmServer
let browser: Browser
let web: WebProcess | undefined
let page: Page

const env = () => ({ DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url })
const configSet = (key: string, value: string) =>
  run(process.execPath, [join(repo, 'apps/cli/bin/dsh.js'), 'config', 'set', key, value], {
    env: { ...process.env, ...env() },
  })

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-e2e-statusline-'))
  work = join(home, 'work')
  mkdirSync(work)
  server = await startMockLlmServer()
  // Prints the model and the tokens the meter counts: both come from the JSON on stdin.
  await configSet(
    'statusline.command',
    `node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log("\\u001b[32m" + j(s).model.id + "\\u001b[0m tokens=" + j(s).tokens));function j(t){return JSON.parse(t)}'`,
  )
  web = await startWeb({ cwd: work, env: env() })
  browser = await launchChromium()
  page = await browser.newPage()
})

afterAll(async () => {
  await browser?.close()
  await web?.stop()
  await server?.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

it('shows the status line command’s first line in the header and keeps it current', async () => {
  await newSession(page, web?.url as string, work)
  const line = page.locator('.session-head .user-status-line')
  await expect.poll(() => line.textContent()).toMatch(/^deepseek-\S+ tokens=/)
  server.enqueue(completionResponse({ text: 'Counted.', usage: deepseekUsage(1234, 66, 0, 0) }))
  await page.fill('textarea[aria-label=message]', 'count')
  await page.press('textarea[aria-label=message]', 'Enter')
  await page.locator('.node.assistant', { hasText: 'Counted.' }).waitFor()
  // The colours are the terminal's: the page shows the text. 1234 in + 66 out is what the meter reads.
  await expect.poll(() => line.textContent(), { timeout: 10_000 }).toMatch(/^deepseek-\S+ tokens=1300$/)
})
