// Presets in the product: the built `dsh run --preset plan` (headless profile, every base row) against
// the mock model server. The plan session's requests offer no write/edit/bash, a forced write is
// refused and changes nothing, resume keeps the preset, and switching it after a turn is refused.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { afterEach, expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../../../apps/cli/bin/dsh.js', import.meta.url))
const homes: string[] = []
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
})

function dsh(home: string, url: string, args: string[]) {
  const proc = spawn(process.execPath, [bin, 'run', ...args], {
    cwd: home,
    env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: url },
  })
  let stdout = ''
  let stderr = ''
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on('close', (code) => resolve({ code, stdout, stderr })),
  )
}

const toolNames = (request: RecordedRequest) =>
  ((request.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((tool) => tool.function.name)

function logOf(home: string, sessionId: string): Array<{ type: string; data: Record<string, unknown> }> {
  return readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line))
}

it('a plan session is offered no mutating tools, refuses a forced write, and keeps its preset on resume', async () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-presets-e2e-'))
  homes.push(home)
  let call = 0
  await using server = await startMockLlmServer({
    respond: () => {
      call++
      // The model forces a write it was never offered; then answers.
      if (call === 1) {
        return completionResponse({
          toolCalls: [{ id: 'w1', name: 'write', arguments: JSON.stringify({ path: 'x.txt', content: 'pwned' }) }],
        })
      }
      return completionResponse({ text: `answer ${call}` })
    },
  })
  const first = await dsh(home, server.url, ['--preset', 'plan', '--output', 'json', 'plan the change'])
  expect(first.stderr).toBe('')
  expect(first.code).toBe(0)
  const { sessionId } = JSON.parse(first.stdout) as { sessionId: string }

  const offered = toolNames(server.requests[0] as RecordedRequest)
  expect(offered).toContain('read')
  expect(offered).toContain('grep')
  for (const mutating of ['write', 'edit', 'bash', 'job_kill']) expect(offered).not.toContain(mutating)
  expect(existsSync(join(home, 'x.txt'))).toBe(false)
  const log = logOf(home, sessionId)
  const result = log.find((event) => event.type === 'tool/result')
  expect(result?.data.code).toBe('TOOL_NOT_ALLOWED')
  expect(log.filter((event) => event.type === 'preset/selected').map((event) => event.data)).toEqual([
    { name: 'plan', by: 'request', origin: 'shipped' },
  ])
  expect(log.find((event) => event.type === 'sandbox/mode')?.data).toMatchObject({ mode: 'read-only' })
  const system = (server.requests[0] as RecordedRequest).body as { messages: Array<{ role: string; content: string }> }
  expect(system.messages[0]?.content).toContain('# Planning session')

  // Resume: the preset is the log's, not a default.
  const resumed = await dsh(home, server.url, ['--resume', sessionId, 'and now?'])
  expect(resumed.code).toBe(0)
  const again = toolNames(server.requests.at(-1) as RecordedRequest)
  expect(again).toEqual(offered)
  expect(logOf(home, sessionId).filter((event) => event.type === 'preset/selected')).toHaveLength(1)

  // Changing the preset of a session with turns is refused, and nothing is sent.
  const before = server.requests.length
  const refused = await dsh(home, server.url, ['--resume', sessionId, '--preset', 'code', 'write it'])
  expect(refused.code).not.toBe(0)
  expect(refused.stderr).toContain(`runs with preset "plan" and already has turns`)
  expect(server.requests.length).toBe(before)
  expect(readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))).toHaveLength(1)
})
