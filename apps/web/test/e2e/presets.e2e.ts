// A session made with the `plan` preset from the new-session form, against its own `dsh web` and mock
// model server (sharing one with the main story raced with that story's killed job waking its agent):
// the request offers no mutating tool, a forced write is refused, and the log records the preset.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { launchChromium, loggedEvents, shots, startWeb, type WebProcess } from './support'

let home: string
let work: string
let server: MockLlmServer
let host: WebProcess
let browser: Browser

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-presets-'))
  work = join(home, 'work')
  mkdirSync(work)
  mkdirSync(shots, { recursive: true })
  server = await startMockLlmServer()
  host = await startWeb({
    cwd: work,
    env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
  })
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  await host?.stop()
  await server?.close()
  rmSync(home, { recursive: true, force: true })
})

it('creates a session with the plan preset from the page; the plan session cannot write', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } })
  await page.goto(host.url)
  const picker = page.locator('#new-session-preset')
  await picker.waitFor()
  expect(await picker.inputValue()).toBe('code')
  expect(await picker.locator('option').allTextContents()).toEqual(['ask', 'code', 'minimal', 'plan', 'review'])
  await picker.selectOption('plan')
  await page.click('#new-session')
  await page.waitForURL(/#\/s\//)
  const planned = /#\/s\/(.+)$/.exec(page.url())?.[1] as string
  await page.locator('.session-head .preset[data-preset=plan]').waitFor()
  server.enqueue(
    completionResponse({
      toolCalls: [{ id: 'call_p', name: 'write', arguments: JSON.stringify({ path: 'plan.txt', content: 'no' }) }],
    }),
    completionResponse({ text: 'Step 1: read the code.' }),
  )
  await page.fill('textarea[aria-label=message]', 'Plan the change')
  await page.click('button.send')
  await page.locator('.node.assistant', { hasText: 'Step 1: read the code.' }).waitFor()
  await page.screenshot({ path: join(shots, '11-plan-preset.png'), fullPage: true })
  expect(server.requests).toHaveLength(2)
  for (const request of server.requests) {
    const offered = ((request.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map(
      (tool) => tool.function.name,
    )
    expect(offered).toContain('read')
    for (const mutating of ['write', 'edit', 'bash']) expect(offered).not.toContain(mutating)
  }
  expect(existsSync(join(work, 'plan.txt'))).toBe(false)
  await expect
    .poll(() => loggedEvents(home, planned).find((event) => event.type === 'turn/end')?.data.reason)
    .toBe('completed')
  const log = loggedEvents(home, planned)
  expect(log.filter((event) => event.type === 'preset/selected').map((event) => event.data)).toEqual([
    { name: 'plan', by: 'request', origin: 'shipped' },
  ])
  expect(log.find((event) => event.type === 'tool/result')?.data.code).toBe('TOOL_NOT_ALLOWED')
})
