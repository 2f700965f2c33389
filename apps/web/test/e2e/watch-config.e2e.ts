// `dsh web --watch-config` in Chromium: editing the --patch file while the host runs adds a row that
// the open page can use at once (/greet), and a broken edit keeps the old tree and shows a banner.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'

const repo = fileURLToPath(new URL('../../../../', import.meta.url))
const bin = join(repo, 'apps/cli/bin/dsh.js')
const shots = join(repo, '.artifacts/screenshots')
const greet = join(repo, 'apps/cli/test/fixtures/greet-command.mjs')

let home: string
let patch: string
let proc: ChildProcess | undefined
let stderr = ''
let browser: Browser
let page: Page

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-watch-'))
  mkdirSync(shots, { recursive: true })
  patch = join(home, 'live.yml')
  writeFileSync(patch, '')
  proc = spawn(process.execPath, [bin, '--watch-config', '--patch', patch, 'web', '--port', '0'], {
    cwd: home,
    env: {
      PATH: process.env.PATH,
      DSH_HOME: home,
      DEEPSEEK_API_KEY: 'sk-test',
      DEEPSEEK_BASE_URL: 'http://127.0.0.1:9',
    },
  })
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  let stdout = ''
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dsh web did not start: ${stderr}`)), 60_000)
    proc?.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const match = /listening on (http:\/\/\S+)/.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve(match[1] as string)
      }
    })
  })
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
  page = await browser.newPage({ viewport: { width: 1280, height: 700 } })
  await page.goto(url)
})

afterAll(async () => {
  await browser?.close()
  if (proc && proc.exitCode === null) {
    const exited = new Promise((resolve) => proc?.on('exit', resolve))
    proc.kill('SIGTERM')
    await exited
  }
  rmSync(home, { recursive: true, force: true })
})

async function waitForStderr(pattern: RegExp): Promise<void> {
  const started = Date.now()
  while (!pattern.test(stderr)) {
    if (Date.now() - started > 20_000) throw new Error(`timed out waiting for ${pattern}; stderr:\n${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function sendGreet(): Promise<string | null> {
  await page.fill('textarea[aria-label=message]', '/greet')
  await page.click('button.send')
  const output = page.locator('.command-output')
  await output.waitFor()
  const text = await output.textContent()
  await output.click()
  await output.waitFor({ state: 'detached' })
  return text
}

it('applies a good edit live (the new row answers /greet) and shows a refused edit as a banner', async () => {
  await page.click('#new-session')
  await page.waitForURL(/#\/s\//)
  await waitForStderr(/dsh: watching .*live\.yml/)

  writeFileSync(patch, `- id: greet\n  use: ${JSON.stringify(greet)}\n  config: { text: hi from the patch }\n`)
  await waitForStderr(/dsh: reconfigured: \+\[greet\]/)
  expect(await sendGreet()).toBe('/greet: hi from the patch')
  await expect(page.locator('.config-banner').count()).resolves.toBe(0)

  writeFileSync(patch, '- id: greet\n  config: [broken\n')
  const banner = page.locator('.config-banner')
  await banner.waitFor()
  await expect(banner.textContent()).resolves.toMatch(
    /rejected[\s\S]*invalid YAML[\s\S]*keeping the last good configuration/,
  )
  await page.screenshot({ path: join(shots, 'watch-config-rejected.png') })
  // The last good tree still runs: the row added before is there.
  expect(await sendGreet()).toBe('/greet: hi from the patch')

  // A page opened after the refusal shows it too (the host baseline carries the last report).
  await page.reload()
  await page.locator('.config-banner').waitFor()
})
