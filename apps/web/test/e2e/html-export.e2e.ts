// Share a session as one HTML file (issue 39): `dsh sessions export ID --format html` writes a page
// that renders the transcript as `dsh web` does, opened from disk in Chromium with every network
// request refused; `--no-tool-output` leaves the tool outputs out of the file.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { png } from '../../../../packages/attachments/test/images.js'
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

/** The file opened in a new page whose every request other than the file itself (and data: URLs) is refused and listed. */
async function openOffline(file: string): Promise<{ page: Page; requests: string[] }> {
  const page = await browser.newPage()
  const requests: string[] = []
  await page.route('**/*', (route) => {
    const url = route.request().url()
    if (url.startsWith('file:') || url.startsWith('data:')) return route.continue()
    requests.push(url)
    return route.abort()
  })
  await page.goto(`file://${file}`)
  return { page, requests }
}

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

  const { page, requests } = await openOffline(file)
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

it('embeds the attached image and renders a table and a diff; a 5,000-event session stays a few MB', async () => {
  writeFileSync(join(work, 'shot.png'), await png(24, 16, '#2266aa'))
  writeFileSync(join(work, 'notes.md'), 'old line\n')
  server.enqueue(
    completionResponse({ toolCalls: [{ id: 'r1', name: 'read', arguments: JSON.stringify({ path: 'notes.md' }) }] }),
    completionResponse({
      toolCalls: [
        {
          id: 'e1',
          name: 'edit',
          arguments: JSON.stringify({ path: 'notes.md', old_string: 'old line', new_string: 'new line' }),
        },
      ],
    }),
    completionResponse({ text: '| file | change |\n| --- | --- |\n| notes.md | edited |\n' }),
  )
  const recorded = await run(
    process.execPath,
    [bin, 'run', '--output', 'json', '--model', 'deepseek-flash', '--attach', 'shot.png', 'update the notes'],
    { cwd: work, env: env() },
  )
  const id = JSON.parse(recorded.stdout).sessionId as string
  const exported = await run(process.execPath, [bin, 'sessions', 'export', id, '--format', 'html'], {
    cwd: work,
    env: env(),
    maxBuffer: 64 * 1024 * 1024,
  })
  const file = join(home, 'image.html')
  writeFileSync(file, exported.stdout)
  const { page, requests } = await openOffline(file)
  const image = page.locator('.node.user img.thumb')
  await image.waitFor()
  expect(await image.getAttribute('src')).toMatch(/^data:image\/png;base64,/)
  await expect
    .poll(() => image.evaluate((element) => (element as unknown as { naturalWidth: number }).naturalWidth))
    .toBe(24)
  expect(await page.locator('.node.assistant table td', { hasText: 'notes.md' }).count()).toBe(1)
  await page.locator('pre.diff .add', { hasText: 'new line' }).first().waitFor({ state: 'attached' })
  expect(requests).toEqual([])
  await page.close()

  // 5,000 events: this session's events repeated under a new id, written as the store writes a file.
  const lines = readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')
    .trim()
    .split('\n')
  const strip = (line: string) => {
    const { crc: _crc, hash: _hash, ...value } = JSON.parse(line) as Record<string, unknown>
    return value
  }
  const header = { ...strip(lines[0] as string), id: `${id.slice(0, 8)}-big` }
  const body = lines.slice(1).map(strip)
  const events = Array.from({ length: 5000 }, (_, seq) => ({ ...body[seq % body.length], seq }))
  writeFileSync(
    join(home, 'sessions', `${header.id}.jsonl`),
    `${[header, ...events].map((value) => JSON.stringify(value)).join('\n')}\n`,
  )
  const big = await run(process.execPath, [bin, 'sessions', 'export', header.id, '--format', 'html'], {
    cwd: work,
    env: env(),
    maxBuffer: 256 * 1024 * 1024,
  })
  const bigFile = join(home, 'big.html')
  writeFileSync(bigFile, big.stdout)
  // One image kept once however often it is shown: the page grows with the text, not the pictures.
  expect(statSync(bigFile).size).toBeLessThan(5_000_000)
  const bigPage = await browser.newPage()
  await bigPage.goto(`file://${bigFile}`)
  await bigPage.locator('.node.user', { hasText: 'update the notes' }).first().waitFor()
  await bigPage.close()
})

it("carries a subagent's own transcript: the task card opens it from the page, with no host", async () => {
  server.enqueue(
    completionResponse({
      toolCalls: [
        {
          id: 't1',
          name: 'task',
          arguments: JSON.stringify({ prompt: 'count the text files', description: 'count files' }),
        },
      ],
    }),
    completionResponse({ text: 'The child counted **three** files.' }),
    completionResponse({ text: 'The subagent says three.' }),
  )
  const recorded = await run(process.execPath, [bin, 'run', '--output', 'json', 'delegate the count'], {
    cwd: work,
    env: env(),
  })
  const id = JSON.parse(recorded.stdout).sessionId as string
  const exported = await run(process.execPath, [bin, 'sessions', 'export', id, '--format', 'html'], {
    cwd: work,
    env: env(),
    maxBuffer: 64 * 1024 * 1024,
  })
  const file = join(home, 'subagent.html')
  writeFileSync(file, exported.stdout)
  const { page, requests } = await openOffline(file)
  await page.locator('.task-card', { hasText: 'count files' }).waitFor()
  await page.locator('.task-card button.task-open').click()
  const child = page.locator('.child-transcript')
  await child.locator('.node.assistant strong', { hasText: 'three' }).waitFor()
  expect(await child.locator('.node.user').first().textContent()).toContain('count the text files')
  expect(await child.textContent()).not.toContain('not in this export')
  expect(requests).toEqual([])
  await page.close()
})
