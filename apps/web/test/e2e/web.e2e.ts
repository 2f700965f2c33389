// `dsh web` as a person uses it: the built CLI as a child process (model = the mock SSE server),
// Debian's Chromium through playwright-core (never a downloaded browser). One story in order:
// prompt and streamed answer, an approved write landing on disk, a cancelled bash, a reload, a host
// restart with resume, a 5,000-event session that opens quickly, settings, a fork and a background job
// (the `plan` preset story has its own host: presets.e2e.ts). Screenshots go to .artifacts/screenshots/
// (gitignored).
import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shots, startWeb, writeBigSession } from './support'

const fixture = fileURLToPath(new URL('./fixtures/ask-write.mjs', import.meta.url))

let home: string
let work: string
let server: MockLlmServer
let browser: Browser
let page: Page
let host: { proc: ChildProcess; url: string; stderr: () => string } | undefined
let sessionId = ''
/** One fixed port for both host lifetimes, so the open page reconnects to the restarted host. */
let port = 0

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

async function startHost(): Promise<NonNullable<typeof host>> {
  const { proc, url, stderr } = await startWeb({
    args: ['--patch', join(home, 'e2e.yml')],
    port,
    cwd: work,
    env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
  })
  return { proc, url, stderr }
}

async function stopHost(): Promise<number | null> {
  if (!host) return null
  const { proc } = host
  host = undefined
  if (proc.exitCode !== null) return proc.exitCode
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  proc.kill('SIGTERM')
  return exited
}

const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-e2e-'))
  work = join(home, 'work')
  mkdirSync(work)
  mkdirSync(shots, { recursive: true })
  writeFileSync(join(home, 'e2e.yml'), `- id: e2e-ask-write\n  use: ${JSON.stringify(fixture)}\n`)
  server = await startMockLlmServer()
  port = await freePort()
  host = await startHost()
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } })
})

afterAll(async () => {
  await browser?.close()
  await stopHost()
  await server?.close()
  rmSync(home, { recursive: true, force: true })
})

describe('dsh web in Chromium', () => {
  it('creates a session, sends a prompt and shows the streamed answer', async () => {
    server.enqueue(
      completionResponse({
        reasoning: 'Thinking it over.',
        text: ['Hello ', 'from ', 'the **mock**.\n\n```ts\nconst x = 1 // one\n```'],
        delayMs: 30,
      }),
    )
    await page.goto(host?.url as string)
    await page.click('#new-session')
    await page.waitForURL(/#\/s\//)
    sessionId = /#\/s\/(.+)$/.exec(page.url())?.[1] as string
    await page.fill('textarea[aria-label=message]', 'Say hello')
    await page.click('button.send')
    await page.locator('.node.assistant:not(.streaming) strong', { hasText: 'mock' }).waitFor()
    await expect(page.locator('.node.user .bubble').first().textContent()).resolves.toBe('Say hello')
    // Code blocks are highlighted.
    await expect(page.locator('pre.code .tok-keyword').first().textContent()).resolves.toBe('const')
    await expect(page.locator('pre.code .tok-comment').first().textContent()).resolves.toBe('// one')
    // Reasoning is there, collapsed.
    expect(await page.locator('details.reasoning').first().getAttribute('open')).toBeNull()
    await page.locator(`a[data-session="${sessionId}"] .title`, { hasText: 'Say hello' }).waitFor()
    await shot('01-conversation')
    // The model picker runs `/model` on the host; the next request uses the new model.
    await page.fill('input[aria-label=model]', 'deepseek:deepseek-v4-flash')
    await page.press('input[aria-label=model]', 'Enter')
    await page.locator('.command-output', { hasText: '/model' }).waitFor()
  })

  it('asks before a write, runs it once allowed, and the file is on disk', async () => {
    server.enqueue(
      completionResponse({
        toolCalls: [
          {
            id: 'call_w',
            name: 'write',
            arguments: JSON.stringify({ path: 'hello.txt', content: 'hi from the browser\n' }),
          },
        ],
      }),
      completionResponse({ text: 'Wrote hello.txt.' }),
    )
    await page.fill('textarea[aria-label=message]', 'Write hello.txt')
    await page.click('button.send')
    const allow = page.locator('.node.tool[data-tool=write] button.allow')
    await allow.waitFor()
    expect(existsSync(join(work, 'hello.txt'))).toBe(false)
    await shot('02-approval')
    await allow.click()
    await page.locator('.node.assistant', { hasText: 'Wrote hello.txt.' }).waitFor()
    expect(readFileSync(join(work, 'hello.txt'), 'utf8')).toBe('hi from the browser\n')
    expect(server.requests.at(-1)?.body.model).toBe('deepseek-v4-flash')
    await page.locator('.node.tool[data-tool=write] .decision', { hasText: 'allowed once' }).waitFor()
    await shot('03-write-done')
  })

  it('cancels a running bash command', async () => {
    server.enqueue(
      completionResponse({
        toolCalls: [{ id: 'call_b', name: 'bash', arguments: JSON.stringify({ command: 'sleep 60' }) }],
      }),
    )
    await page.fill('textarea[aria-label=message]', 'Sleep a minute')
    await page.click('button.send')
    await page.locator('.node.tool[data-tool=bash].status-running').waitFor()
    await page.locator('.session[data-status=running]').waitFor()
    // A follow-up queued while the turn runs is shown, edited and removed through the host's inbox.
    await page.fill('textarea[aria-label=message]', 'Then tidy up')
    await page.click('button.queue-followup')
    await page.locator('.queued .text', { hasText: 'Then tidy up' }).waitFor()
    await page.click('.queued button:text("edit")')
    await page.fill('.queued input', 'Then tidy up, please')
    await page.click('.queued button:text("save")')
    await page.locator('.queued .text', { hasText: 'Then tidy up, please' }).waitFor()
    await shot('04-running-bash')
    await page.click('.queued button:text("remove")')
    await page.locator('.queue').waitFor({ state: 'detached' })
    const started = Date.now()
    await page.click('button.cancel')
    await page.locator('.node.turn-end.reason-aborted').waitFor()
    expect(Date.now() - started).toBeLessThan(30_000)
    await page.locator('.node.tool[data-tool=bash].status-cancelled .output', { hasText: '[aborted:' }).waitFor()
    await page.locator('.session[data-status=idle]').waitFor()
  })

  it('shows the same conversation after a reload', async () => {
    const before = await page.locator('.conversation .node').allTextContents()
    await page.reload()
    await page.locator('.node.turn-end.reason-aborted').waitFor()
    expect(await page.locator('.conversation .node').allTextContents()).toEqual(before)
  })

  it('resumes the session after the host restarts, in the open page and after a reload', async () => {
    const before = await page.locator('.conversation .node').count()
    expect(await stopHost()).toBe(0)
    await page.locator('.dot.off').waitFor()
    host = await startHost()
    // The open page reconnects both streams by itself and converges without duplicates.
    await page.locator('.dot.on').waitFor({ timeout: 30_000 })
    server.enqueue(completionResponse({ text: 'Back after the restart.' }))
    await page.fill('textarea[aria-label=message]', 'Are you there?')
    await page.click('button.send')
    await page.locator('.node.assistant', { hasText: 'Back after the restart.' }).waitFor()
    expect(await page.locator('.node.assistant', { hasText: 'Wrote hello.txt.' }).count()).toBe(1)
    expect(await page.locator('.conversation .node').count()).toBeGreaterThan(before)
    await shot('05-after-restart')
    const live = await page.locator('.conversation .node').allTextContents()
    await page.reload()
    await page.locator('.node.assistant', { hasText: 'Back after the restart.' }).waitFor()
    expect(await page.locator('.conversation .node').allTextContents()).toEqual(live)
    // The durable log holds the whole story: one session file with both host lifetimes in it.
    const log = readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
    expect(log).toContain('Back after the restart.')
    expect(log).toContain('Wrote hello.txt.')
  })

  it('shows a call cut short by a host crash as outcome unknown after resume', async () => {
    server.enqueue(
      completionResponse({
        toolCalls: [{ id: 'call_k', name: 'bash', arguments: JSON.stringify({ command: 'sleep 15' }) }],
      }),
    )
    await page.fill('textarea[aria-label=message]', 'Run a long job')
    await page.click('button.send')
    await page.locator('.node.tool[data-tool=bash].status-running').waitFor()
    // The host dies without any chance to close the turn.
    const proc = host?.proc as ChildProcess
    host = undefined
    const exited = new Promise((resolve) => proc.on('exit', resolve))
    proc.kill('SIGKILL')
    await exited
    host = await startHost()
    await page.reload()
    await page.locator('.node.tool[data-tool=bash] .outcome', { hasText: 'outcome unknown' }).waitFor()
    await page.locator('.node.turn-end.reason-interrupted').waitFor()
    await shot('06-outcome-unknown')
  })

  it('opens a 5,000-event session in a few seconds and scrolls back through it', async () => {
    const id = writeBigSession(home, work, 'big-session-5000')
    const started = Date.now()
    await page.goto(`${host?.url}#/s/${id}`)
    await page.locator('.node.assistant', { hasText: 'answer 1249' }).waitFor()
    const openMs = Date.now() - started
    console.log(`5,000-event session opened in ${openMs} ms`)
    expect(openMs).toBeLessThan(10_000)
    // Incremental rendering: only the newest page of nodes is in the DOM at first.
    const firstCount = await page.locator('.conversation .node').count()
    expect(firstCount).toBeLessThan(400)
    // Reaching the top adds one page and keeps the view where it was (no cascade of pages).
    const toTop = () =>
      page.locator('.conversation').evaluate((el) => {
        el.scrollTop = 0
      })
    await toTop()
    await page.locator('.node.user .bubble', { hasText: /^question 1175$/ }).waitFor()
    await page.waitForTimeout(300)
    expect(await page.locator('.conversation .node').count()).toBe(firstCount + 150)
    await toTop()
    await page.locator('.node.user .bubble', { hasText: /^question 1125$/ }).waitFor()
    await page.waitForTimeout(300)
    expect(await page.locator('.conversation .node').count()).toBe(firstCount + 300)
    await shot('07-big-session')
  })

  it('stores an API key from the settings page and never shows it back', async () => {
    await page.goto(`${host?.url}#/settings`)
    await page.locator('.settings td', { hasText: 'DEEPSEEK_API_KEY' }).waitFor()
    await page.fill('input[aria-label="credential name"]', 'E2E_TEST_KEY')
    await page.fill('input[aria-label="credential value"]', 'sk-e2e-secret-value')
    await page.click('.settings .add-key button[type=submit]')
    await page.locator('.settings td', { hasText: 'E2E_TEST_KEY' }).waitFor()
    await page.locator('.settings .note', { hasText: 'E2E_TEST_KEY saved' }).waitFor()
    expect(await page.content()).not.toContain('sk-e2e-secret-value')
    expect(readFileSync(join(home, '.credentials.yaml'), 'utf8')).toContain('sk-e2e-secret-value')
    await shot('08-settings')
  })

  it('forks the session at its first turn end into a new session', async () => {
    await page.goto(`${host?.url}#/s/${sessionId}`)
    await page.locator('.node.assistant', { hasText: 'Back after the restart.' }).waitFor()
    await page.locator('.node.turn-end .fork').first().click()
    await page.waitForURL((url) => !url.hash.endsWith(sessionId))
    await page.locator('.node.notice', { hasText: `Forked from ${sessionId}` }).waitFor()
    await expect(page.locator('.node.user .bubble').allTextContents()).resolves.toEqual(['Say hello'])
    await page.locator('.sessions .meta', { hasText: 'fork' }).first().waitFor()
    await shot('09-fork')
  })

  it('shows a background job and kills it from the page', async () => {
    server.enqueue(
      completionResponse({
        toolCalls: [
          { id: 'call_j', name: 'bash', arguments: JSON.stringify({ command: 'sleep 45', run_in_background: true }) },
        ],
      }),
      completionResponse({ text: 'Started it in the background.' }),
      completionResponse({ text: 'The job was killed.' }),
    )
    await page.fill('textarea[aria-label=message]', 'Start a background job')
    await page.click('button.send')
    await page.locator('.node.assistant', { hasText: 'Started it in the background.' }).waitFor()
    await page.locator('.jobs .job.running', { hasText: 'sleep 45' }).waitFor()
    // The session list converges on the idle agent too.
    await page.locator('.sessions li.current .status.idle').waitFor({ state: 'attached' })
    await shot('10-jobs')
    await page.click('.jobs .job.running button.job-kill')
    await page.locator('.jobs .job.killed').waitFor({ state: 'attached' })
  })
})
