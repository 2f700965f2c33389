// Choosing an agent preset from the page: the built `dsh web` (model = the mock SSE server) in Debian's
// Chromium. A session created with the `plan` preset in the new-session form shows it, its request
// offers no mutating tool, a forced write is refused (nothing on disk), and its log records the preset.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type MockLlmServer, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'

const repo = fileURLToPath(new URL('../../../../', import.meta.url))
const bin = join(repo, 'apps/cli/bin/dsh.js')
const shots = join(repo, '.artifacts/screenshots')

let home: string
let work: string
let server: MockLlmServer
let proc: ChildProcess | undefined
let browser: Browser

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-presets-'))
  work = join(home, 'work')
  mkdirSync(work)
  mkdirSync(shots, { recursive: true })
  server = await startMockLlmServer()
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
})

afterAll(async () => {
  await browser?.close()
  if (proc && proc.exitCode === null) {
    const exited = new Promise((resolve) => proc?.on('exit', resolve))
    proc.kill('SIGTERM')
    await exited
  }
  await server?.close()
  rmSync(home, { recursive: true, force: true })
})

function startHost(): Promise<string> {
  proc = spawn(process.execPath, [bin, 'web', '--port', '0'], {
    cwd: work,
    env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
  })
  let stdout = ''
  let stderr = ''
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dsh web did not start: ${stderr}`)), 60_000)
    proc?.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const match = /listening on (http:\/\/\S+)/.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve(match[1] as string)
      }
    })
    proc?.on('exit', (code) => reject(new Error(`dsh web exited ${code}: ${stderr}`)))
  })
}

const toolNames = (request: RecordedRequest) =>
  ((request.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((tool) => tool.function.name)

it('creates a session with the plan preset from the page; the plan session cannot write', async () => {
  const url = await startHost()
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } })
  await page.goto(url)
  const picker = page.locator('#new-session-preset')
  await picker.waitFor()
  expect(await picker.inputValue()).toBe('code')
  expect(await picker.locator('option').allTextContents()).toEqual(['ask', 'code', 'minimal', 'plan'])
  await picker.selectOption('plan')
  await page.click('#new-session')
  await page.waitForURL(/#\/s\//)
  const sessionId = /#\/s\/(.+)$/.exec(page.url())?.[1] as string
  await page.locator('.session-head .preset[data-preset=plan]').waitFor()

  server.enqueue(
    completionResponse({
      toolCalls: [{ id: 'call_w', name: 'write', arguments: JSON.stringify({ path: 'plan.txt', content: 'no' }) }],
    }),
    completionResponse({ text: 'Step 1: read the code.' }),
  )
  await page.fill('textarea[aria-label=message]', 'Plan the change')
  await page.click('button.send')
  await page.locator('.node.assistant', { hasText: 'Step 1: read the code.' }).waitFor()
  await page.screenshot({ path: join(shots, 'presets-plan-session.png'), fullPage: true })

  const offered = toolNames(server.requests.at(-2) as RecordedRequest)
  expect(offered).toContain('read')
  for (const mutating of ['write', 'edit', 'bash']) expect(offered).not.toContain(mutating)
  expect(existsSync(join(work, 'plan.txt'))).toBe(false)
  const log = readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> })
  expect(log.filter((event) => event.type === 'preset/selected').map((event) => event.data)).toEqual([
    { name: 'plan', by: 'request', origin: 'shipped' },
  ])
  expect(log.find((event) => event.type === 'tool/result')?.data.code).toBe('TOOL_NOT_ALLOWED')
  await page.close()
})
