// Two `dsh web` hosts on one PostgreSQL database (issue 22): each its own process, its own DSH_HOME,
// both pointed at one throwaway cluster by DSH_SESSION_STORE. A session created on host A appears in
// host B's list, marked busy with A named; once A is paused (SIGSTOP) past its lease, B takes it over
// from the page and continues it. Every claim is checked in the database: the session rows, the lease
// row's owner and fencing token, the events B appended.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { type Postgres, postgresBin, startPostgres } from '@dsh/test-support/postgres'
import pg from 'pg'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, shots, startWeb, type WebProcess } from './support'

/** Short enough for the test to wait out, long enough that a loaded machine renews in time. */
const LEASE_TTL_MS = 4000

let root: string
let work: string
let cluster: Postgres
let db: pg.Client
let server: MockLlmServer
let hostA: WebProcess
let hostB: WebProcess
let browser: Browser
let pageA: Page
let pageB: Page
let sessionId = ''

interface LeaseRow {
  pid: number
  token: string
  live: boolean
}

async function lease(id: string): Promise<LeaseRow | undefined> {
  const result = await db.query<LeaseRow>(
    'SELECT pid, token::text, expires_at > now() AS live FROM dsh_leases WHERE session_id = $1',
    [id],
  )
  return result.rows[0]
}

async function userTexts(id: string): Promise<string[]> {
  const result = await db.query<{ body: string }>(
    `SELECT body FROM dsh_events WHERE session_id = $1 AND type = 'user/message' ORDER BY seq`,
    [id],
  )
  // What a person typed (no `origin`), not the notes dsh adds as user messages.
  return result.rows.flatMap((row) => {
    const event = JSON.parse(row.body) as { data: { origin?: unknown; message: { content: Array<{ text?: string }> } } }
    return event.data.origin ? [] : [event.data.message.content.map((block) => block.text ?? '').join('')]
  })
}

function startHost(name: string): Promise<WebProcess> {
  const home = join(root, name)
  mkdirSync(home)
  return startWeb({
    args: ['--patch', join(root, 'shared.yml')],
    cwd: work,
    env: {
      DSH_HOME: home,
      DSH_SESSION_STORE: cluster.url(),
      DEEPSEEK_API_KEY: 'sk-test',
      DEEPSEEK_BASE_URL: server.url,
    },
  })
}

describe.skipIf(postgresBin() === undefined)('two dsh web hosts on one PostgreSQL database', () => {
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'dsh-web-shared-'))
    work = join(root, 'work')
    mkdirSync(work)
    // A short lease, and the list of the shared store re-read often, so the story runs in seconds.
    writeFileSync(
      join(root, 'shared.yml'),
      `- id: session-store\n  config:\n    leaseTtlMs: ${LEASE_TTL_MS}\n- id: web-host\n  config:\n    listRefreshMs: 250\n`,
    )
    cluster = await startPostgres()
    db = new pg.Client({ connectionString: cluster.url() })
    server = await startMockLlmServer()
    // One after the other: the first creates the schema (the second would wait on its advisory lock anyway).
    hostA = await startHost('a')
    hostB = await startHost('b')
    await db.connect()
    browser = await launchChromium()
    pageA = await browser.newPage({ viewport: { width: 1280, height: 860 } })
    pageB = await browser.newPage({ viewport: { width: 1280, height: 860 } })
  })

  afterAll(async () => {
    await browser?.close()
    if (hostA?.proc.exitCode === null) hostA.proc.kill('SIGCONT')
    await hostA?.stop()
    await hostB?.stop()
    await db?.end()
    await cluster?.stop()
    await server?.close()
    if (root) rmSync(root, { recursive: true, force: true })
  })

  it('a session created on host A appears on host B, busy with A named', async () => {
    await pageB.goto(hostB.url)
    await pageA.goto(hostA.url)
    server.enqueue(completionResponse({ text: 'Answered on host A.' }))
    await pageA.click('#new-session')
    await pageA.waitForURL(/#\/s\//)
    sessionId = /#\/s\/(.+)$/.exec(pageA.url())?.[1] as string
    await pageA.fill('textarea[aria-label=message]', 'Hello from A')
    await pageA.click('button.send')
    await pageA.locator('.node.assistant', { hasText: 'Answered on host A.' }).waitFor()

    // The database holds the session, leased to host A's process.
    const sessions = await db.query<{ id: string }>('SELECT id FROM dsh_sessions')
    expect(sessions.rows.map((row) => row.id)).toEqual([sessionId])
    expect(await lease(sessionId)).toMatchObject({ pid: hostA.proc.pid, live: true })
    expect(await userTexts(sessionId)).toEqual(['Hello from A'])

    // Host B never touched it: the list it reads from the shared store shows it, busy on A.
    const row = pageB.locator(`a[data-session="${sessionId}"]`)
    await row.locator('.title', { hasText: 'Hello from A' }).waitFor()
    await row.locator(`.lease.busy[data-holder-pid="${hostA.proc.pid}"]`).waitFor()
    await pageB.screenshot({ path: join(shots, '40-shared-busy-row.png'), fullPage: true })

    // Opening it on B shows the durable conversation read-only and names the owner; the lease stays A's.
    await row.click()
    await pageB.locator('.node.assistant', { hasText: 'Answered on host A.' }).waitFor()
    const notice = pageB.locator(`.lease-notice.busy[data-holder-pid="${hostA.proc.pid}"]`)
    await notice.waitFor()
    expect(await notice.textContent()).toContain(`pid ${hostA.proc.pid}`)
    expect(await pageB.locator('.toast').count()).toBe(0)
    expect(await lease(sessionId)).toMatchObject({ pid: hostA.proc.pid, live: true })
  })

  it('once host A is paused past its lease, host B takes the session over and continues it', async () => {
    const before = await lease(sessionId)
    hostA.proc.kill('SIGSTOP')
    // B's page offers the take-over only once the database says the lease expired.
    const takeOver = pageB.locator(`.lease-notice.expired[data-holder-pid="${hostA.proc.pid}"] button.take-over`)
    await takeOver.waitFor({ timeout: LEASE_TTL_MS * 5 })
    expect(await lease(sessionId)).toMatchObject({ pid: hostA.proc.pid, live: false })
    await pageB.screenshot({ path: join(shots, '41-shared-take-over.png'), fullPage: true })
    await takeOver.click()
    await pageB.locator('.lease-notice').waitFor({ state: 'detached' })

    // The lease is B's now, under a new fencing token.
    const after = await lease(sessionId)
    expect(after).toMatchObject({ pid: hostB.proc.pid, live: true })
    expect(BigInt(after?.token ?? 0)).toBeGreaterThan(BigInt(before?.token ?? 0))

    server.enqueue(completionResponse({ text: 'Answered on host B.' }))
    await pageB.fill('textarea[aria-label=message]', 'Hello from B')
    await pageB.click('button.send')
    await pageB.locator('.node.assistant', { hasText: 'Answered on host B.' }).waitFor()
    expect(await userTexts(sessionId)).toEqual(['Hello from A', 'Hello from B'])
    await pageB.screenshot({ path: join(shots, '42-shared-continued.png'), fullPage: true })

    // Host A, resumed, lists the session as taken over by B (it still has its agent, but no lease).
    hostA.proc.kill('SIGCONT')
    const listed = await waitFor(async () => {
      const response = await fetch(new URL('/api/sessions', hostA.url))
      const body = (await response.json()) as { sessions: Array<{ sessionId: string; holder?: { pid: number } }> }
      const mine = body.sessions.find((session) => session.sessionId === sessionId)
      return mine?.holder?.pid === hostB.proc.pid ? mine : undefined
    })
    expect(listed.holder?.pid).toBe(hostB.proc.pid)
    await pageA.locator('.lease-notice.lost').waitFor()
  })
})

async function waitFor<T>(probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
