// Step through a session on the web page (issue 37): after a turn with a tool call, "step through"
// shows each model request of the log (nothing runs): the first with its tool call and result, the
// second with the answer; "the exact request" shows the system prompt and messages as sent.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { launchChromium, newSession, startWeb, type WebProcess } from './support'

let home: string
let work: string
let server: MockLlmServer
let browser: Browser
let web: WebProcess | undefined
let page: Page

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-e2e-steps-'))
  work = join(home, 'work')
  mkdirSync(work)
  writeFileSync(join(work, 'plan.txt'), 'ship it\n')
  server = await startMockLlmServer()
  web = await startWeb({
    cwd: work,
    env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
  })
  browser = await launchChromium()
  page = await browser.newPage()
})

afterAll(async () => {
  await browser?.close()
  await web?.stop()
  await server?.close()
  if (home) rmSync(home, { recursive: true, force: true })
})

it('walks the model requests of a session and shows the exact request', async () => {
  const sessionId = await newSession(page, web?.url as string, work)
  server.enqueue(
    completionResponse({ toolCalls: [{ id: 'r1', name: 'read', arguments: JSON.stringify({ path: 'plan.txt' }) }] }),
    completionResponse({ text: 'The plan says ship it.' }),
  )
  await page.fill('textarea[aria-label=message]', 'what is the plan?')
  await page.press('textarea[aria-label=message]', 'Enter')
  await page.locator('.node.assistant', { hasText: 'The plan says ship it.' }).waitFor()
  await page.locator('a.steps').click()
  await expect.poll(() => page.url()).toContain(`#/steps/${sessionId}`)
  const step = page.locator('section.step')
  await expect.poll(() => step.locator('h3').textContent()).toMatch(/^Step 1 of 2/)
  expect(await step.locator('.step-last').textContent()).toContain('what is the plan?')
  expect(await step.locator('.step-call code').textContent()).toContain('read {"path":"plan.txt"}')
  expect(await step.locator('.step-result').textContent()).toContain('ship it')
  await page.locator('.steps-head button', { hasText: 'next' }).click()
  await expect.poll(() => step.locator('h3').textContent()).toMatch(/^Step 2 of 2/)
  expect(await step.locator('.step-answer').textContent()).toBe('answer: The plan says ship it.')
  await page.locator('.steps-head input[type=checkbox]').check()
  await expect.poll(() => page.locator('pre.system-prompt').textContent()).toContain('You are dsh')
  expect(await page.locator('.step-messages li').last().textContent()).toContain('ship it')
  // Back to the session, as it was; its header names the command that continues it in a terminal.
  await page.locator('.steps-head a', { hasText: 'back to the session' }).click()
  await page.locator('.node.assistant', { hasText: 'The plan says ship it.' }).waitFor()
  expect(await page.locator('button.continue-terminal').getAttribute('data-command')).toBe(
    `cd ${JSON.stringify(work)} && dsh --resume ${sessionId}`,
  )
})

it('compares a fork with the session it came from, branch beside branch', async () => {
  await newSession(page, web?.url as string, work)
  server.enqueue(completionResponse({ text: 'Answer one.' }))
  await page.fill('textarea[aria-label=message]', 'first question')
  await page.press('textarea[aria-label=message]', 'Enter')
  await page.locator('.node.assistant', { hasText: 'Answer one.' }).waitFor()
  server.enqueue(
    completionResponse({ toolCalls: [{ id: 'r2', name: 'read', arguments: JSON.stringify({ path: 'plan.txt' }) }] }),
    completionResponse({ text: 'The original branch read the plan.' }),
  )
  await page.fill('textarea[aria-label=message]', 'second question')
  await page.press('textarea[aria-label=message]', 'Enter')
  await page.locator('.node.assistant', { hasText: 'The original branch read the plan.' }).waitFor()
  // A what-if: the conversation before message 2, then another message 2.
  const before = page.url()
  await page.fill('textarea[aria-label=message]', '/rewind 2 conversation')
  await page.press('textarea[aria-label=message]', 'Enter')
  await expect.poll(() => page.url()).not.toBe(before)
  server.enqueue(completionResponse({ text: 'The fork answered at once.' }))
  await page.fill('textarea[aria-label=message]', 'second question, put differently')
  await page.press('textarea[aria-label=message]', 'Enter')
  await page.locator('.node.assistant', { hasText: 'The fork answered at once.' }).waitFor()
  await page.locator('a.compare').click()
  const row = (name: string) => page.locator(`.compare-table tr[data-row="${name}"] td`)
  await expect
    .poll(() => row('final answer').allTextContents())
    .toEqual(['The original branch read the plan.', 'The fork answered at once.'])
  expect(await row('tool calls').allTextContents()).toEqual(['read', '-'])
  expect(await row('requests').allTextContents()).toEqual(['2', '1'])
})
