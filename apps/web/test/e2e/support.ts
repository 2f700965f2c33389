// Shared by the browser stories (issues 16 and 24): start the built `dsh web` as a child process (its
// URL read from stdout), launch Debian's Chromium (never a downloaded browser), wait on stderr.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'

export const repo = fileURLToPath(new URL('../../../../', import.meta.url))
export const shots = join(repo, '.artifacts/screenshots')
const bin = join(repo, 'apps/cli/bin/dsh.js')

export interface WebProcess {
  proc: ChildProcess
  url: string
  stderr(): string
  /** Resolves when stderr matches (e.g. a `--watch-config` report). */
  waitForStderr(pattern: RegExp, ms?: number): Promise<void>
  stop(): Promise<void>
}

/** `dsh <args before web> web --port <port, default 0>` in `cwd` with `env` (PATH is added). */
export async function startWeb(options: {
  args?: string[]
  port?: number
  cwd: string
  env: Record<string, string>
}): Promise<WebProcess> {
  const proc = spawn(process.execPath, [bin, ...(options.args ?? []), 'web', '--port', String(options.port ?? 0)], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', ...options.env },
  })
  let stdout = ''
  let stderr = ''
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dsh web did not start: ${stderr}`)), 60_000)
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const match = /listening on (http:\/\/\S+)/.exec(stdout)
      if (match) {
        clearTimeout(timer)
        resolve(match[1] as string)
      }
    })
    proc.on('exit', (code) => reject(new Error(`dsh web exited ${code}: ${stderr}`)))
  })
  return {
    proc,
    url,
    stderr: () => stderr,
    async waitForStderr(pattern, ms = 20_000) {
      const started = Date.now()
      while (!pattern.test(stderr)) {
        if (Date.now() - started > ms) throw new Error(`timed out waiting for ${pattern}; stderr:\n${stderr}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
    async stop() {
      if (proc.exitCode !== null) return
      const exited = new Promise((resolve) => proc.on('exit', resolve))
      proc.kill('SIGTERM')
      await exited
    },
  }
}

export function launchChromium(): Promise<Browser> {
  mkdirSync(shots, { recursive: true })
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
}

/** The events of session `id` under `home`, from its durable JSONL file. */
export function loggedEvents(home: string, id: string): Array<{ type: string; data: Record<string, unknown> }> {
  return readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> })
}

/**
 * `dsh web` in `work` under `DSH_HOME=home`, its model the mock server at `modelUrl`, with the
 * `e2e-ask-write` fixture row patched in (the real `write` tool asks for approval before it runs).
 */
export function startAskWriteWeb(home: string, work: string, modelUrl: string): Promise<WebProcess> {
  const fixture = fileURLToPath(new URL('./fixtures/ask-write.mjs', import.meta.url))
  writeFileSync(join(home, 'ask.yml'), `- id: e2e-ask-write\n  use: ${JSON.stringify(fixture)}\n`)
  return startWeb({
    args: ['--patch', join(home, 'ask.yml')],
    cwd: work,
    env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: modelUrl },
  })
}

/** The text of the tool result for call `callId` in session `id`'s durable log ('' when there is none). */
export function loggedToolResult(home: string, id: string, callId: string): string {
  for (const line of readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .slice(1)) {
    const event = JSON.parse(line) as {
      type: string
      data: { message?: { toolCallId?: string; content?: Array<{ type: string; text?: string }> } }
    }
    if (event.type === 'tool/result' && event.data.message?.toolCallId === callId)
      return (event.data.message.content ?? []).map((block) => block.text ?? '').join('')
  }
  return ''
}

/**
 * Opens the page and creates a session in the host's directory once the host baseline is in (the
 * new-session form names that directory); resolves with the new session's id.
 */
export async function newSession(page: Page, url: string, cwd: string): Promise<string> {
  await page.goto(url)
  await page.locator(`input[aria-label="working directory"][placeholder*=${JSON.stringify(cwd)}]`).waitFor()
  await page.click('#new-session')
  await page.waitForURL(/#\/s\//)
  return /#\/s\/(.+)$/.exec(page.url())?.[1] as string
}

/**
 * Writes a durable session of `turns` plain turns (4 events each: `question N` / `answer N`) straight
 * into `home`'s store, the way a long-lived session looks to the page; returns its id.
 */
export function writeBigSession(home: string, cwd: string, id: string, turns = 1250): string {
  const createdAt = Date.now() - 60_000
  const lines = [JSON.stringify({ type: 'session', version: 0, id, createdAt, cwd })]
  let seq = 0
  const event = (type: string, data: unknown, surface = false) =>
    lines.push(
      JSON.stringify({
        type,
        seq: seq++,
        time: createdAt + seq,
        data,
        ...(surface ? { surfaceOp: { op: 'append' } } : {}),
      }),
    )
  for (let turn = 0; turn < turns; turn++) {
    event('turn/start', { turn })
    event('user/message', { message: { role: 'user', content: [{ type: 'text', text: `question ${turn}` }] } }, true)
    event(
      'assistant/message',
      { message: { role: 'assistant', content: [{ type: 'text', text: `answer ${turn}` }], finishReason: 'stop' } },
      true,
    )
    event('turn/end', { reason: 'completed' })
  }
  mkdirSync(join(home, 'sessions'), { recursive: true })
  writeFileSync(join(home, 'sessions', `${id}.jsonl`), `${lines.join('\n')}\n`)
  return id
}

/** What a story file shares between its tests: a home, its work directory, the mock model, the host, Chromium. */
export interface WebFixture {
  home: string
  work: string
  server: MockLlmServer
  web: WebProcess
  browser: Browser
}

/**
 * Registers the file's beforeAll/afterAll: a fresh home (named after `prefix`) with a `work` directory,
 * a mock model, `dsh web` started there by `start` (default: plain `startWeb` with the mock's key) and
 * Chromium; all stopped and removed after the file. Read the fields inside tests, not at import.
 */
export function webFixture(
  prefix: string,
  start: (home: string, work: string, modelUrl: string) => Promise<WebProcess> = (home, work, modelUrl) =>
    startWeb({ cwd: work, env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: modelUrl } }),
): WebFixture {
  const fixture = {} as WebFixture
  beforeAll(async () => {
    fixture.home = mkdtempSync(join(tmpdir(), prefix))
    fixture.work = join(fixture.home, 'work')
    mkdirSync(fixture.work)
    fixture.server = await startMockLlmServer()
    fixture.web = await start(fixture.home, fixture.work, fixture.server.url)
    fixture.browser = await launchChromium()
  })
  afterAll(async () => {
    await fixture.browser?.close()
    await fixture.web?.stop()
    await fixture.server?.close()
    if (fixture.home) rmSync(fixture.home, { recursive: true, force: true })
  })
  return fixture
}
