// Issue 31: retries are not silent. A rate-limited model is retried by the recovery row; each retry is
// a logged `recovery/retry` event, and `dsh run` says so on stderr even when it is not a terminal; the
// terminal chat shows it in the transcript. (The web page folds the same event into a notice.)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import { completionResponse, errorResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'
import { fixture } from './tui/pty.js'

let home: string
let model: MockLlmServer
let patch: string
beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-retries-'))
  model = await startMockLlmServer()
  patch = join(home, 'fast-retry.yml')
  writeFileSync(patch, '- id: context-retry\n  config: { baseDelayMs: 20, maxDelayMs: 40 }\n')
})
afterEach(async () => {
  await model.close()
  rmSync(home, { recursive: true, force: true })
})

it('dsh run: each retry is logged and said on stderr; the run then completes', async () => {
  model.enqueue(
    errorResponse(429, 'slow down', { type: 'rate_limit_error' }),
    errorResponse(503, 'overloaded', { type: 'server_error' }),
    completionResponse({ text: 'finally' }),
  )
  const run = await runDsh(['--patch', patch, 'run', 'hello'], { home, modelUrl: model.url })
  expect(run.code, run.stderr).toBe(0)
  expect(run.stdout.trim()).toBe('finally')
  expect(run.stderr).toMatch(/dsh: rate limited \(HTTP 429\), retrying in \d+ ms \(1\/4\)/)
  expect(run.stderr).toMatch(/dsh: the model provider is unavailable \(HTTP 503\), retrying in \d+ ms \(2\/4\)/)
  const retries = eventData(durableEvents(home), 'recovery/retry')
  expect(retries.map((retry) => [retry.attempt, retry.status])).toEqual([
    [1, 429],
    [2, 503],
  ])
})

it('the terminal chat shows the retry in the transcript', async () => {
  const f = await fixture()
  try {
    writeFileSync(
      join(f.home, 'fast-retry.yml'),
      '- id: context-retry\n  config: { baseDelayMs: 20, maxDelayMs: 40 }\n',
    )
    f.server.enqueue(
      errorResponse(429, 'slow down', { type: 'rate_limit_error' }),
      completionResponse({ text: 'ok then' }),
    )
    const screen = f.open(['--patch', join(f.home, 'fast-retry.yml'), 'say', 'hello'])
    await screen.waitFor('ok then')
    expect(screen.text()).toMatch(/↻ rate limited \(HTTP 429\), retrying in \d+ ms \(1\/4\)/)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
  } finally {
    await f.close()
  }
})
