// The HTML export of a 5,000-event session (issue 39: "stays under a few MB and opens in under 2 s in
// Chromium"). One real session (a read, an edit, a Markdown answer) is recorded through `dsh run`
// against a local mock model, its events repeated under a new id up to 5,000, then `dsh sessions
// export --format html` is timed, the file measured, and Chromium (Debian's, headless) opens it from
// disk: the time from navigation to the first node and to the newest answer (its table) on screen. Beside it, the same page
// for the recorded original (42 events): what the size of the session adds. Needs `npm run build` and the web build.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'
import { chromium } from 'playwright-core'

const bin = fileURLToPath(new URL('../apps/cli/bin/dsh.js', import.meta.url))
const home = mkdtempSync(join(tmpdir(), 'dsh-bench-html-'))
const work = join(home, 'work')
mkdirSync(work)
writeFileSync(join(work, 'notes.md'), 'old line\n')
const server = await startMockLlmServer()
const env = { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-bench', DEEPSEEK_BASE_URL: server.url }
// Async: the mock model answers from this process, so a blocking spawn would wait on itself.
const dsh = async (...args) =>
  (await promisify(execFile)(process.execPath, [bin, ...args], { cwd: work, env, maxBuffer: 1 << 28 })).stdout

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
  completionResponse({
    text: 'Done: **one** line changed.\n\n| file | change |\n| --- | --- |\n| notes.md | edited |\n',
  }),
)
const id = JSON.parse(await dsh('run', '--output', 'json', 'update the notes')).sessionId
const lines = readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')
  .trim()
  .split('\n')
const strip = (line) => {
  const { crc, hash, ...value } = JSON.parse(line)
  return value
}
const body = lines.slice(1).map(strip)
const big = `${id.slice(0, 8)}-big`
const events = Array.from({ length: 5000 }, (_, seq) => ({ ...body[seq % body.length], seq }))
writeFileSync(
  join(home, 'sessions', `${big}.jsonl`),
  `${[{ ...strip(lines[0]), id: big }, ...events].map((value) => JSON.stringify(value)).join('\n')}\n`,
)

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
})
async function measure(session, count) {
  const started = performance.now()
  const html = await dsh('sessions', 'export', session, '--format', 'html')
  const exportMs = performance.now() - started
  const file = join(home, `${session}.html`)
  writeFileSync(file, html)
  const page = await browser.newPage()
  const opened = performance.now()
  await page.goto(`file://${file}`)
  await page.locator('.node').first().waitFor()
  const firstMs = performance.now() - opened
  // The page renders from the newest node, older pages as one scrolls up: the last answer is what shows.
  await page.locator('.node.assistant table td', { hasText: 'notes.md' }).last().waitFor()
  const allMs = performance.now() - opened
  await page.close()
  return { events: count, mb: statSync(file).size / 1e6, exportMs, firstMs, allMs }
}
const rows = [await measure(id, body.length), await measure(big, 5000)]
await browser.close()
await server.close()
rmSync(home, { recursive: true, force: true })
for (const r of rows)
  console.log(
    `${String(r.events).padStart(5)} events: ${r.mb.toFixed(2)} MB, export ${r.exportMs.toFixed(0)} ms, first node ${r.firstMs.toFixed(0)} ms, newest answer ${r.allMs.toFixed(0)} ms`,
  )
console.log(
  `5,000 events vs ${body.length}: ${(rows[1].mb / rows[0].mb).toFixed(1)}x the bytes, ${(rows[1].allMs / rows[0].allMs).toFixed(1)}x the time to the newest answer`,
)
