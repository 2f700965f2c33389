// Usage, cost and the status line through the TypeScript SDK over `dsh rpc` (issue 33): an
// OpenAI-compatible endpoint with prices the user set, a mock model reporting usage; `usage()` sums
// the session's log (the figure computed by hand here) and reads the context meter; `statusLine()`
// runs the user's statusline.command with the session's state on stdin.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { completionResponse, deepseekUsage, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { DshClient } from '../src/index.js'

const cliPath = fileURLToPath(new URL('../../../apps/cli/bin/dsh.js', import.meta.url))
const run = promisify(execFile)

let home: string
let ws: string
let server: MockLlmServer
const chat: ReturnType<typeof completionResponse>[] = []

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-sdk-usage-'))
  ws = mkdtempSync(join(tmpdir(), 'dsh-sdk-usage-ws-'))
  server = await startMockLlmServer({
    respond: (request) =>
      request.path === '/v1/models' ? { type: 'json', status: 200, body: { object: 'list', data: [] } } : chat.shift(),
  })
  const env = { ...process.env, DSH_HOME: home }
  const set = (key: string, value: string) => run(process.execPath, [cliPath, 'config', 'set', key, value], { env })
  await set('endpoints.local.baseUrl', `${server.url}/v1`)
  await set('endpoints.local.models', '["qwen"]')
  await set('endpoints.local.prices', JSON.stringify({ input: 2, output: 8, cacheRead: 0.5 }))
  await set('model', 'openai-compatible:local/qwen')
  // The script reads the JSON on stdin and prints fields of it: what a user's status line does.
  await set(
    'statusline.command',
    `node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);console.log("[" + j.model.id + "] $" + j.cost.total_cost_usd)})'`,
  )
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(ws, { recursive: true, force: true })
})

it('reports a session’s cost, tokens and context use, and the user’s status line', { timeout: 60_000 }, async () => {
  const dsh = new DshClient({
    cliPath,
    cwd: ws,
    env: { PATH: process.env.PATH, DSH_HOME: home },
    closeStepMs: 5000,
  })
  try {
    // 1000 prompt tokens (400 cache hits), 200 completion tokens (50 reasoning), twice.
    chat.push(completionResponse({ text: 'one', usage: deepseekUsage(1000, 200, 400, 50) }))
    const first = await dsh.run('first')
    chat.push(completionResponse({ text: 'two', usage: deepseekUsage(1000, 200, 400, 50) }))
    await dsh.run('second', { sessionId: first.sessionId })
    const usage = await dsh.usage(first.sessionId)
    // By hand, per request: 600 x $2/M + 400 x $0.5/M + 200 x $8/M = $0.003.
    expect(usage.usd).toBeCloseTo(0.006, 12)
    expect(usage).toMatchObject({ sessionId: first.sessionId, requests: 2, unknownRequests: 0 })
    expect(usage.models).toMatchObject([
      { model: 'openai-compatible:local/qwen', requests: 2, inputTokens: 2000, outputTokens: 400, cacheHitTokens: 800 },
    ])
    // The meter: the last answer's usage (1000 + 200) plus nothing after it.
    expect(usage.context?.tokens).toBe(1200)
    const line = await dsh.statusLine(first.sessionId)
    expect(line).toEqual({ configured: true, text: '[local/qwen] $0.006' })
  } finally {
    await dsh.close()
  }
})
