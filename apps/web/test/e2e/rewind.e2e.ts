// Rewind on the web page (issue 32), in Chromium against the mock model: turn 1 writes a file with the
// write tool, turn 2 changes the workspace with bash (sed -i, rm, mv, a new binary file). "Rewind to
// here" on message 2, "Files only", puts the workspace back byte for byte (the test's own copy); /redo
// gives turn 2 back; a concurrent edit is listed and Cancel leaves it; "Conversation only" opens a new
// session with the message in the composer, and its next request has none of turn 2; `/rewind N
// conversation` typed in the composer does the same.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, fileTree, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
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
  home = mkdtempSync(join(tmpdir(), 'dsh-e2e-rewind-'))
  work = join(home, 'work')
  mkdirSync(work)
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

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

async function send(text: string): Promise<void> {
  await page.fill('textarea[aria-label=message]', text)
  await page.press('textarea[aria-label=message]', 'Enter')
}

/** Opens "rewind to here" on the person's message that says `text`. */
async function rewindPanel(text: string) {
  const message = page.locator('.node.user', { hasText: text })
  await message.locator('button.rewind-message').click()
  const panel = message.locator('.rewind-panel')
  await panel.locator('button', { hasText: 'Files only' }).waitFor()
  return panel
}

it('rewinds the files, gives them back, keeps a concurrent edit, and forks the conversation', async () => {
  writeFileSync(join(work, 'config.ini'), 'mode=alpha\n')
  writeFileSync(join(work, 'keep.txt'), 'keep\n')
  writeFileSync(join(work, 'move.txt'), 'move\n')
  const sessionId = await newSession(page, web?.url as string, work)
  server.enqueue(
    call('w1', 'write', { path: 'notes.txt', content: 'one\n' }),
    completionResponse({ text: 'Done one.' }),
  )
  await send('make notes')
  await page.locator('.node.assistant', { hasText: 'Done one.' }).waitFor()
  const afterOne = mkdtempSync(join(tmpdir(), 'dsh-e2e-rewind-copy-'))
  cpSync(work, afterOne, { recursive: true })
  server.enqueue(
    call('b1', 'bash', {
      command:
        "sed -i 's/alpha/beta/' config.ini && rm keep.txt && mv move.txt moved.txt && printf '\\000\\377' > data.bin",
    }),
    completionResponse({ text: 'Done two.' }),
  )
  await send('change things')
  await page.locator('.node.assistant', { hasText: 'Done two.' }).waitFor()
  await expect.poll(() => fileTree(work)['data.bin']).toBe(Buffer.from([0, 255]).toString('base64'))
  const afterTwo = fileTree(work)
  await page.locator('.node.user', { hasText: 'change things' }).locator('button.rewind-message').waitFor()

  let panel = await rewindPanel('change things')
  await expect.poll(() => panel.textContent()).toContain('config.ini')
  await panel.locator('button', { hasText: 'Files only' }).click()
  await panel.locator('.rewind-notice', { hasText: /took back \d+ file changes/ }).waitFor()
  expect(fileTree(work)).toEqual(fileTree(afterOne))
  await panel.locator('button', { hasText: 'close' }).click()

  await send('/redo')
  await page.locator('.command-output', { hasText: /gave back \d+ file changes/ }).waitFor()
  expect(fileTree(work)).toEqual(afterTwo)

  writeFileSync(join(work, 'config.ini'), 'mode=mine\n')
  panel = await rewindPanel('change things')
  await panel.locator('button', { hasText: 'Files only' }).click()
  await panel.locator('.rewind-conflict').waitFor()
  expect(await panel.locator('.rewind-files').last().textContent()).toContain('config.ini')
  await panel.locator('button', { hasText: 'Cancel' }).click()
  expect(readFileSync(join(work, 'config.ini'), 'utf8')).toBe('mode=mine\n')

  panel = await rewindPanel('change things')
  await panel.locator('button', { hasText: 'Conversation only' }).click()
  await expect.poll(() => page.url()).not.toContain(sessionId)
  await expect.poll(() => page.inputValue('textarea[aria-label=message]')).toBe('change things')
  const before = server.requests.length
  server.enqueue(completionResponse({ text: 'Fresh answer.' }))
  await page.fill('textarea[aria-label=message]', 'change things, differently')
  await page.press('textarea[aria-label=message]', 'Enter')
  await page.locator('.node.assistant', { hasText: 'Fresh answer.' }).waitFor()
  const body = JSON.stringify(server.requests[before]?.body)
  expect(body).toContain('make notes')
  expect(body).toContain('change things, differently')
  expect(body).not.toContain('Done two.')
  expect(readFileSync(join(work, 'config.ini'), 'utf8')).toBe('mode=mine\n')

  // Typed in the composer: `/rewind 2 conversation` opens the fork the host made, message back to edit.
  const forkUrl = page.url()
  await send('/rewind 2 conversation')
  await expect.poll(() => page.url()).not.toBe(forkUrl)
  await expect.poll(() => page.inputValue('textarea[aria-label=message]')).toBe('change things, differently')
  rmSync(afterOne, { recursive: true })
}, 90_000)
