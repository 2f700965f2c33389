// Session management on the page (issue 24): full-text search across sessions opening a hit at its
// event, rename / export / delete, the workspace list, per-message copy and "fork from here", and the
// "allow for this chat" session grant. Every check reads the outside world: the durable JSONL logs,
// the downloaded files, the files the tools wrote.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, loggedEvents, shots, startAskWriteWeb, type WebProcess } from './support'

let home: string
let work: string
let other: string
let server: MockLlmServer
let web: WebProcess
let browser: Browser
let context: BrowserContext
let page: Page
/** The session whose answer holds the phrase searched for, and a second one. */
let found = ''
let second = ''

const PHRASE = 'periwinkle lighthouse'
const sessionFile = (id: string) => join(home, 'sessions', `${id}.jsonl`)
const header = (id: string) => JSON.parse(readFileSync(sessionFile(id), 'utf8').split('\n')[0] as string)
const openedId = () => /#\/s\/([A-Za-z0-9_.-]+)/.exec(page.url())?.[1] as string

/** Starts a session in `cwd` (the typed directory; empty: the host's) and runs one prompt to its answer. */
async function sessionWithAnswer(prompt: string, answer: string, cwd = ''): Promise<string> {
  server.enqueue(completionResponse({ text: answer }))
  const before = page.url()
  await page.fill('input[aria-label="working directory"]', cwd)
  await page.click('#new-session')
  await page.waitForURL((url) => url.href !== before && /#\/s\//.test(url.href))
  const id = openedId()
  await page.fill('textarea[aria-label=message]', prompt)
  await page.click('button.send')
  await page.locator('.node.turn-end').first().waitFor()
  return id
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-sessions-'))
  work = join(home, 'work')
  other = join(home, 'other')
  mkdirSync(work)
  mkdirSync(other)
  server = await startMockLlmServer()
  web = await startAskWriteWeb(home, work, server.url)
  browser = await launchChromium()
  context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(web.url).origin })
  page = await context.newPage()
  await page.goto(web.url)
  await page.locator('.dot.on').waitFor()
})

afterAll(async () => {
  await browser?.close()
  await web?.stop()
  await server?.close()
  rmSync(home, { recursive: true, force: true })
})

describe('session management in the page', () => {
  it('finds a phrase from another session and opens that session at the event', async () => {
    found = await sessionWithAnswer('Name a landmark', `The ${PHRASE} stands on the cliff.`)
    second = await sessionWithAnswer('Something else', 'Nothing to see here.', other)
    expect(openedId()).toBe(second)
    await page.keyboard.press('Alt+KeyS')
    expect(await page.evaluate(`document.activeElement?.id`)).toBe('full-search')
    await page.keyboard.type(PHRASE)
    await page.keyboard.press('Enter')
    const hit = page.locator(`.hits a[data-hit-session="${found}"]`)
    await hit.waitFor()
    expect(await hit.locator('mark').allTextContents()).toEqual(['periwinkle', 'lighthouse'])
    await hit.click()
    await page.waitForURL(new RegExp(`#/s/${found}/at/\\d+$`))
    // The marked node is that event of the durable log: the assistant message holding the phrase.
    const logged = readFileSync(sessionFile(found), 'utf8').trim().split('\n').slice(1)
    const seq = logged
      .map((line) => JSON.parse(line) as { seq: number; type: string; data: unknown })
      .find((event) => event.type === 'assistant/message' && JSON.stringify(event.data).includes(PHRASE))?.seq
    expect(seq).toBeTypeOf('number')
    const marked = page.locator('.conversation .node.hit')
    await marked.waitFor()
    expect(await marked.getAttribute('data-hit-seq')).toBe(String(seq))
    expect(await marked.getAttribute('data-seq')).toBe(String(seq))
    expect(await marked.textContent()).toContain(PHRASE)
    await page.screenshot({ path: join(shots, 'sessions-01-search-hit.png') })
  })

  it('renames the session durably and exports it as Markdown and JSONL', async () => {
    await page.click('.session-actions .rename')
    await page.fill('input[aria-label="session title"]', 'Landmarks')
    await page.press('input[aria-label="session title"]', 'Enter')
    await page.locator(`.sessions a[data-session="${found}"] .title`, { hasText: 'Landmarks' }).waitFor()
    const titles = loggedEvents(home, found).filter((event) => event.type === 'session/title')
    expect(titles.map((event) => event.data)).toEqual([{ title: 'Landmarks', by: 'user' }])

    const [markdown] = await Promise.all([
      page.waitForEvent('download'),
      page.click('.session-actions a.export >> nth=0'),
    ])
    expect(markdown.suggestedFilename()).toBe(`dsh-${found}.md`)
    const md = readFileSync((await markdown.path()) as string, 'utf8')
    expect(md).toContain(`# Session ${found}`)
    expect(md).toContain('## User\n\nName a landmark')
    expect(md).toContain(`## Assistant\n\nThe ${PHRASE} stands on the cliff.`)

    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.click('.session-actions a.export >> nth=1')])
    // The log as `dsh sessions export --format jsonl` prints it: the header, then every event of the store.
    const exported = readFileSync((await jsonl.path()) as string, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { seq: number; type: string; data: unknown })
    expect(exported[0]).toMatchObject({ type: 'session', id: found })
    const stored = loggedEvents(home, found) as unknown as { seq: number; type: string; data: unknown }[]
    expect(exported.slice(1).map((event) => [event.seq, event.type])).toEqual(
      stored.map((event) => [event.seq, event.type]),
    )
    expect(exported.at(-1)?.data).toEqual({ title: 'Landmarks', by: 'user' })
    // ".html": one page to share, the transcript embedded (issue 39; html-export.e2e opens one offline).
    const [html] = await Promise.all([page.waitForEvent('download'), page.click('.session-actions a.share')])
    const shared = readFileSync((await html.path()) as string, 'utf8')
    expect(shared).toMatch(/^<!doctype html>/i)
    expect(shared).toContain('window.__DSH_EXPORT__ = {"header":{"type":"session"')
    expect(shared).toContain(`"id":"${found}"`)
  })

  it('copies a message and forks from an answer into a new session that ends at its turn', async () => {
    const user = page.locator('.conversation .node.user').first()
    await user.locator('button.copy').click()
    await user.locator('button.copy', { hasText: 'copied' }).waitFor()
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe('Name a landmark')

    const answer = page.locator('.conversation .node.assistant', { hasText: PHRASE })
    await answer.locator('button.fork-message').click()
    await page.waitForURL((url) => !url.href.includes(found))
    const child = openedId()
    await page.locator('.node.notice', { hasText: `Forked from ${found}` }).waitFor()
    const parent = loggedEvents(home, found) as unknown as { seq: number; type: string }[]
    const turnEnd = parent.find((event) => event.type === 'turn/end')?.seq
    await expect.poll(() => existsSync(sessionFile(child))).toBe(true)
    const forked = loggedEvents(home, child) as unknown as { seq: number; type: string }[]
    expect(header(child)).toMatchObject({ parentSession: found, seedLength: (turnEnd as number) + 1 })
    // The copied prefix ends at that turn's end; the fork marker follows it.
    expect(forked.map((event) => event.type).slice(-2)).toEqual(['turn/end', 'session/end-seed'])
    expect(forked.at(-2)?.seq).toBe(turnEnd)
  })

  it('lists recent workspaces and starts a session in one (loopback)', async () => {
    const row = page.locator(`.workspaces li[data-cwd="${other}"]`)
    await row.waitFor()
    await expect(
      page.locator('.workspaces li').evaluateAll((items) => items.map((li) => li.getAttribute('data-cwd'))),
    ).resolves.toEqual(expect.arrayContaining([work, other]))
    const before = openedId()
    await row.locator('button.start-here').click()
    await page.waitForURL((url) => !url.href.includes(before))
    const created = openedId()
    await page.locator('.session-head .cwd', { hasText: other }).waitFor()
    // Listing the workspaces answers whether this client may choose; from a loopback page it may.
    const view = (await page.evaluate(async () => (await fetch('/api/workspaces')).json())) as { canChoose: boolean }
    expect(view.canChoose).toBe(true)
    await expect.poll(() => existsSync(sessionFile(created)) && header(created).cwd).toBe(other)
  })

  it('deletes a session: gone from the store and from the list', async () => {
    await page.goto(`${new URL(web.url).origin}/#/s/${second}`)
    await page.locator(`.session-head .id[data-id="${second}"]`).waitFor()
    expect(existsSync(sessionFile(second))).toBe(true)
    await page.click('.session-actions button.delete')
    await page.click('.session-actions button.delete.confirm')
    await page.waitForURL((url) => !url.href.includes(second))
    await page.locator(`.sessions a[data-session="${second}"]`).waitFor({ state: 'detached' })
    expect(existsSync(sessionFile(second))).toBe(false)
    const listed = (await page.evaluate(async () => (await fetch('/api/sessions')).json())) as {
      sessions: { sessionId: string }[]
    }
    expect(listed.sessions.map((row) => row.sessionId)).not.toContain(second)
  })

  it('allows a tool for this chat: the next call of that kind runs without asking, and the grant is logged', async () => {
    server.enqueue(
      completionResponse({
        toolCalls: [{ id: 'call_g1', name: 'write', arguments: JSON.stringify({ path: 'one.txt', content: '1\n' }) }],
      }),
      completionResponse({
        toolCalls: [{ id: 'call_g2', name: 'write', arguments: JSON.stringify({ path: 'two.txt', content: '2\n' }) }],
      }),
      completionResponse({ text: 'Both written.' }),
    )
    const before = openedId()
    await page.fill('input[aria-label="working directory"]', '')
    await page.click('#new-session')
    await page.waitForURL((url) => /#\/s\//.test(url.href) && !(before && url.href.includes(before)))
    const id = openedId()
    await page.fill('textarea[aria-label=message]', 'Write two files')
    await page.click('button.send')
    await page.locator('.node.tool[data-tool=write] button.allow-session').click()
    await page.locator('.node.assistant', { hasText: 'Both written.' }).waitFor()
    expect(readFileSync(join(work, 'one.txt'), 'utf8')).toBe('1\n')
    expect(readFileSync(join(work, 'two.txt'), 'utf8')).toBe('2\n')
    await page.locator('.node.tool .decision', { hasText: 'allowed for this chat' }).waitFor()
    await page.locator('.node.tool .decision', { hasText: "allowed by this chat's grant" }).waitFor()
    await expect
      .poll(() =>
        loggedEvents(home, id)
          .filter((event) => event.type === 'approval/decided')
          .map(({ data }) => ({ tool: data.toolName, decision: data.decision, by: data.by, grant: data.grant })),
      )
      .toEqual([
        {
          tool: 'write',
          decision: 'allowed-once',
          by: 'answerer',
          grant: { scope: 'session', toolName: 'write', kind: expect.any(String) },
        },
        { tool: 'write', decision: 'allowed-once', by: 'grant', grant: undefined },
      ])
    await page.screenshot({ path: join(shots, 'sessions-02-grant.png') })
  })

  it('allows similar calls: the suggested rule is kept in the user settings and answers the next call', async () => {
    const write = (id: string, path: string) =>
      completionResponse({
        toolCalls: [{ id, name: 'write', arguments: JSON.stringify({ path, content: `${path}\n` }) }],
      })
    server.enqueue(write('call_r1', 'lib/a.txt'), write('call_r2', 'lib/b.txt'), completionResponse({ text: 'Rules.' }))
    const before = openedId()
    await page.fill('input[aria-label="working directory"]', '')
    await page.click('#new-session')
    await page.waitForURL((url) => /#\/s\//.test(url.href) && !(before && url.href.includes(before)))
    await page.fill('textarea[aria-label=message]', 'Write into lib')
    await page.click('button.send')
    const similar = page.locator('.node.tool[data-tool=write] .allow-similar')
    await similar.locator('button.allow-rule', { hasText: 'Edit(lib/**)' }).waitFor()
    await similar.locator('select').selectOption('user')
    await similar.locator('button.allow-rule').click()
    await page.locator('.node.assistant', { hasText: 'Rules.' }).waitFor()
    expect(readFileSync(join(work, 'lib', 'b.txt'), 'utf8')).toBe('lib/b.txt\n')
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toContain('Edit(lib/**)')
    await page.locator('.node.tool .decision', { hasText: 'allowed by rule allow Edit(lib/**)' }).waitFor()
  })
})
