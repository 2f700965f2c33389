// Attachments in the browser: a PNG dragged onto the composer and a text file from the file picker
// reach the model request (image part with the file's bytes, text copied in), and the transcript
// shows the image as a thumbnail served from the attachment store. Debian's Chromium, the built CLI.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { chromium } from 'playwright-core'
import { expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../../../cli/bin/dsh.js', import.meta.url))
// A 2x2 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAFElEQVQImWM4Y8xwxpgBhM8YMwAAHyID/fO6hNcAAAAASUVORK5CYII=',
  'base64',
)

function startHost(home: string, model: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [bin, 'web', '--port', '0'], {
    cwd: home,
    env: {
      PATH: process.env.PATH,
      DSH_HOME: home,
      DEEPSEEK_API_KEY: 'sk-test',
      DEEPSEEK_BASE_URL: model,
      DSH_MODEL: 'deepseek-flash',
    },
  })
  let out = ''
  return new Promise((resolve, reject) => {
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const match = /listening on (http:\/\/\S+)/.exec(out)
      if (match) resolve({ proc, url: match[1] as string })
    })
    proc.on('exit', (code) => reject(new Error(`dsh web exited ${code}`)))
  })
}

it('a file dragged onto the composer and one picked reach the model; the transcript shows a thumbnail', async () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-web-attach-'))
  await using server = await startMockLlmServer({ responses: [completionResponse({ text: 'Two pixels and a note.' })] })
  const host = await startHost(home, server.url)
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
  try {
    const page = await browser.newPage()
    await page.goto(host.url)
    await page.click('#new-session')
    await page.waitForURL(/#\/s\//)
    // Drag and drop: the DataTransfer a real drop carries, with a File made in the page.
    const dataTransfer = await page.evaluateHandle(`(() => {
      const bytes = Uint8Array.from(atob(${JSON.stringify(PNG.toString('base64'))}), (char) => char.charCodeAt(0))
      const transfer = new DataTransfer()
      transfer.items.add(new File([bytes], 'shot.png', { type: 'image/png' }))
      return transfer
    })()`)
    await page.dispatchEvent('form.composer', 'dragover', { dataTransfer })
    await page.dispatchEvent('form.composer', 'drop', { dataTransfer })
    await page.locator('.composer .attachment', { hasText: 'shot.png' }).waitFor()
    await page.setInputFiles('input[aria-label="attach files"]', {
      name: 'notes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('the note from the picker'),
    })
    await page.locator('.composer .attachment', { hasText: 'notes.txt' }).waitFor()
    await page.fill('textarea[aria-label=message]', 'What are these?')
    await page.click('button.send')
    await page.locator('.node.assistant', { hasText: 'Two pixels and a note.' }).waitFor()

    type Part = { type: string; text?: string; image_url?: { url: string } }
    const messages = (server.requests[0] as RecordedRequest).body.messages as Array<{ content: string | Part[] }>
    const parts = messages.flatMap((message) => (Array.isArray(message.content) ? message.content : []))
    expect(parts.filter((part) => part.type === 'image_url').map((part) => part.image_url?.url)).toEqual([
      `data:image/png;base64,${PNG.toString('base64')}`,
    ])
    expect(parts.some((part) => part.text?.includes('the note from the picker'))).toBe(true)
    // The thumbnail is the stored blob, loaded by the browser.
    const thumb = page.locator('.node.user img.thumb')
    await thumb.waitFor()
    await expect
      .poll(() =>
        thumb.evaluate((img) => {
          const loaded = img as unknown as { complete: boolean; naturalWidth: number }
          return loaded.complete && loaded.naturalWidth
        }),
      )
      .toBe(2)
    await expect(page.locator('.node.user .bubble').textContent()).resolves.toBe('What are these?')
    await expect(page.locator('.composer .attachment').count()).resolves.toBe(0)
  } finally {
    await browser.close()
    host.proc.kill('SIGTERM')
    await new Promise((done) => host.proc.on('exit', done))
    rmSync(home, { recursive: true, force: true })
  }
})
