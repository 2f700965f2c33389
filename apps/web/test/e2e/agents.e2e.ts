// The page's view of every running agent (issue 38): while the page's own session waits on its
// subagent, a `dsh run` and a `dsh run --bg` started from a terminal under the same DSH_HOME show up in
// the sidebar's agents list with their kind and state, and a background run that ended shows as done.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, type MockResponse, startMockLlmServer } from '@dsh/test-support'
import { afterAll, expect, it } from 'vitest'
import { newSession, repo, shots, webFixture } from './support'

const fixture = webFixture('dsh-web-agents-')
const extra: MockLlmServer[] = []
const children: ChildProcess[] = []
let open!: () => void
const gate = new Promise<void>((done) => {
  open = done
})
afterAll(async () => {
  open()
  for (const child of children) child.kill('SIGKILL')
  for (const server of extra) await server.close()
})

function held(response: MockResponse): MockResponse {
  if (response.type !== 'sse') throw new Error('only SSE responses wait')
  return { ...response, steps: [{ until: gate }, ...response.steps] }
}

async function dsh(args: string[], cwd: string, responses: MockResponse[]) {
  const server = await startMockLlmServer({ responses })
  extra.push(server)
  const proc = spawn(process.execPath, [join(repo, 'apps/cli/bin/dsh.js'), ...args], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      DSH_HOME: fixture.home,
      DEEPSEEK_API_KEY: 'sk-test',
      DEEPSEEK_BASE_URL: server.url,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(proc)
  let out = ''
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk
  })
  // Listened for from the start: a launcher may exit while the test awaits another one.
  const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)))
  return { proc, server, out: () => out, exited }
}

it('lists the page session, its subagent, a terminal run and background runs with their states', async () => {
  fixture.server.enqueue(
    completionResponse({
      toolCalls: [
        { id: 'call_task', name: 'task', arguments: JSON.stringify({ prompt: 'Wait a while.', description: 'wait' }) },
      ],
    }),
    held(completionResponse({ text: 'child done' })),
    completionResponse({ text: 'parent done' }),
  )
  const terminalDir = join(fixture.home, 'terminal')
  const bgDir = join(fixture.home, 'bg')
  const doneDir = join(fixture.home, 'done')
  for (const dir of [terminalDir, bgDir, doneDir]) mkdirSync(dir)
  const page = await fixture.browser.newPage({ viewport: { width: 1280, height: 900 } })
  const pageSession = await newSession(page, fixture.web.url, fixture.work)
  await page.fill('textarea[aria-label=message]', 'Delegate the waiting')
  await page.click('button.send')

  const terminal = await dsh(['run', 'think'], terminalDir, [held(completionResponse({ text: 'thought' }))])
  const background = await dsh(['run', '--bg', 'work'], bgDir, [held(completionResponse({ text: 'worked' }))])
  const finished = await dsh(['run', '--bg', 'quick'], doneDir, [completionResponse({ text: 'quick answer' })])
  await background.exited
  await finished.exited
  const backgroundId = background.out().trim()
  const finishedId = finished.out().trim()
  // The quick background run has ended once its record says so.
  const record = join(fixture.home, 'background', `${finishedId}.json`)
  for (let i = 0; i < 200 && !(existsSync(record) && JSON.parse(readFileSync(record, 'utf8')).endedAt); i++)
    await new Promise((done) => setTimeout(done, 100))
  await terminal.server.waitForRequests(1, 20_000)
  await background.server.waitForRequests(1, 20_000)

  const list = page.locator('details.agents ul[aria-label="running agents"]')
  const row = (id: string) => list.locator(`li[data-agent="${id}"]`)
  await row(pageSession).waitFor({ timeout: 15_000 })
  await expect.poll(() => row(pageSession).getAttribute('data-state'), { timeout: 15_000 }).toBe('running')
  expect(await row(pageSession).getAttribute('data-kind')).toBe('foreground')
  const child = list.locator('li[data-kind="child"]')
  await child.waitFor({ timeout: 15_000 })
  expect(await child.getAttribute('data-state')).toBe('running')
  await row(backgroundId).waitFor({ timeout: 15_000 })
  expect(await row(backgroundId).getAttribute('data-kind')).toBe('background')
  expect(await row(backgroundId).getAttribute('data-state')).toBe('running')
  await expect.poll(() => row(finishedId).getAttribute('data-state'), { timeout: 15_000 }).toBe('done')
  const terminalRow = list.locator('li[data-kind="foreground"]', { hasText: terminalDir })
  await terminalRow.waitFor({ timeout: 15_000 })
  expect(await terminalRow.getAttribute('data-state')).toBe('running')
  await page.screenshot({ path: join(shots, 'agents-panel.png') })

  // A background run waiting on an approval: answered from the page, it goes on and finishes.
  const asksDir = join(fixture.home, 'asks')
  mkdirSync(asksDir)
  const asking = await dsh(['run', '--bg', 'needs approval'], asksDir, [
    completionResponse({
      toolCalls: [
        {
          id: 'esc',
          name: 'bash',
          arguments: JSON.stringify({
            command: 'echo allowed-from-the-page > approved.txt',
            sandbox_permissions: 'danger-full-access',
            justification: 'the story needs an approval',
          }),
        },
      ],
    }),
    completionResponse({ text: 'approved and done' }),
  ])
  await asking.exited
  const askingId = asking.out().trim()
  const askingRow = row(askingId)
  await expect.poll(() => askingRow.getAttribute('data-state'), { timeout: 15_000 }).toBe('waiting for approval')
  await askingRow.locator('.agent-approval', { hasText: 'approved.txt' }).waitFor()
  await page.screenshot({ path: join(shots, 'agents-approval.png') })
  await askingRow.locator('button.agent-allow').click()
  await expect.poll(() => row(askingId).getAttribute('data-state'), { timeout: 20_000 }).toBe('done')
  expect(readFileSync(join(asksDir, 'approved.txt'), 'utf8')).toBe('allowed-from-the-page\n')

  // Stop from the page: the terminal run gets SIGTERM, saves its session and ends.
  await terminalRow.locator('button.agent-stop').click()
  expect(await terminal.exited).toBe(143)

  // A row opens that session's transcript.
  await row(finishedId).locator('a').click()
  await page.waitForURL(new RegExp(`#/s/${finishedId}`))
  await page.locator('.node.assistant', { hasText: 'quick answer' }).waitFor({ timeout: 15_000 })
  open()
  await page.close()
}, 120_000)
