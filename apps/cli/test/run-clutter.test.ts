// A `dsh run` that never reached a model leaves no session behind (built binary); a session that
// already holds a conversation is kept whatever the run did.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { runDsh } from './dsh-child.js'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-clutter-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

const sessions = async (): Promise<Array<{ id: string }>> =>
  JSON.parse((await runDsh(['sessions', 'ls', '--json'], { home })).stdout || '[]')

it('a run without a key says so and keeps no session', async () => {
  const run = await runDsh(['run', 'hello'], { home, env: { DEEPSEEK_API_KEY: undefined } })
  expect(run.code).toBe(ExitCode.CONFIG)
  expect(run.stderr).toContain('no API key for DeepSeek')
  expect(run.stderr).toContain('no model answered, so no session was kept')
  expect(run.stderr).not.toContain('--resume')
  expect(await sessions()).toEqual([])
  const json = await runDsh(['run', '--output', 'json', 'hello'], { home })
  expect(JSON.parse(json.stdout)).toMatchObject({ reason: 'error', discarded: true })
  expect(await sessions()).toEqual([])
})

it('a resumed session is kept when the run fails before the model', async () => {
  const server = await startMockLlmServer({ responses: [completionResponse({ text: 'Hi.' })] })
  try {
    const first = await runDsh(['run', '--output', 'json', 'hello'], { home, modelUrl: server.url })
    const id = JSON.parse(first.stdout).sessionId as string
    const again = await runDsh(['run', '--resume', id, 'more'], { home })
    expect(again.code).toBe(ExitCode.CONFIG)
    expect(existsSync(join(home, 'sessions', `${id}.jsonl`))).toBe(true)
    expect((await sessions()).map((s) => s.id)).toEqual([id])
  } finally {
    await server.close()
  }
})
