// The model (or a prompt) cannot exhaust the host (issue 34), through the built `dsh` with the mock
// model: `--attach` of a /proc file attaches its real content (it stats as 0 bytes), `@` or `--attach`
// of a device or FIFO is refused at once with the fs code, and SIGTERM during a long `bash` call stops
// its process tree, saves the log and exits 143. Outcomes are read from the durable log and `ps`.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type AnySessionEvent, eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest'
import { startDsh } from './dsh-child.js'

let home: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-resources-'))
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

const dsh = (args: string[]) => startDsh(args, { home, modelUrl: server.url })

async function waitFor(path: string, stderr: () => string): Promise<void> {
  const started = Date.now()
  while (!existsSync(path)) {
    if (Date.now() - started > 15_000) throw new Error(`the tool never started:\n${stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

function durableEvents(): AnySessionEvent[] {
  const files = readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
  expect(files).toHaveLength(1)
  return readFileSync(join(home, 'sessions', files[0] as string), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line))
}

const userText = (events: AnySessionEvent[]) =>
  eventData(events, 'user/message')
    .flatMap((data) => (typeof data.message.content === 'string' ? [data.message.content] : data.message.content))
    .map((block) => (typeof block === 'string' ? block : block.type === 'text' ? block.text : ''))
    .join('\n')

describe('attachments of files that are not regular files', () => {
  it('--attach /proc/self/status attaches its real content, not an empty file', async () => {
    server.enqueue(completionResponse({ text: 'seen' }))
    const run = await dsh(['run', '--attach', '/proc/self/status', 'what is attached?']).exited
    expect(run.code, run.stderr).toBe(0)
    const text = userText(durableEvents())
    expect(text).toMatch(/<context attachment="\/proc\/self\/status" bytes="[1-9]\d*">\nName:\s/)
  })

  it.each([
    ['--attach of /dev/zero', ['--attach', '/dev/zero', 'look']],
    ['@/dev/urandom', ['look at @/dev/urandom']],
    ['@ of a FIFO', ['look at @pipe']],
  ])(
    '%s is refused at once, before any model request',
    async (_name, args) => {
      execFileSync('mkfifo', [join(home, 'pipe')])
      const started = Date.now()
      const run = await dsh(['run', ...args]).exited
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(run.code).not.toBe(0)
      expect(run.stderr).toMatch(/not a regular file/)
      expect(server.requests).toHaveLength(0)
    },
    20_000,
  )
})

describe('SIGTERM', () => {
  it('during a long bash call stops its process tree, saves the log and exits 143', async () => {
    const marker = join(home, 'tree-started')
    // A tree: a background grandchild and a foreground child, both long.
    const command = `sleep 47.5 & touch ${marker}; sleep 48.5; echo never`
    server.enqueue(
      completionResponse({ toolCalls: [{ id: 'c1', name: 'bash', arguments: JSON.stringify({ command }) }] }),
    )
    const run = dsh(['run', 'run the long command'])
    await waitFor(marker, run.stderr)
    run.proc.kill('SIGTERM')
    const exit = await run.exited
    expect(exit.code, exit.stderr).toBe(143)
    const survivors = spawnSync('pgrep', ['-f', 'sleep 4[78].5'], { encoding: 'utf8' }).stdout.trim()
    expect(survivors).toBe('')
    const events = durableEvents()
    const result = eventData(events, 'tool/result')[0]
    expect(JSON.stringify(result?.message.content)).toMatch(/aborted: the command was cancelled/)
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
  }, 30_000)

  it('during a tool body that ignores cancellation still saves the log and exits 143 within the grace', async () => {
    const patch = join(home, 'stuck.yml')
    const use = fileURLToPath(new URL('fixtures/stuck-tool.mjs', import.meta.url))
    writeFileSync(patch, `- id: stuck\n  use: ${JSON.stringify(use)}\n`)
    const marker = join(home, 'stuck-started')
    server.enqueue(
      completionResponse({ toolCalls: [{ id: 'c1', name: 'stuck', arguments: JSON.stringify({ marker }) }] }),
    )
    const run = dsh(['run', '--patch', patch, 'call stuck'])
    await waitFor(marker, run.stderr)
    const signalled = Date.now()
    run.proc.kill('SIGTERM')
    const exit = await run.exited
    expect(exit.code, exit.stderr).toBe(143)
    expect(Date.now() - signalled).toBeLessThan(12_000)
    expect(exit.stderr).toMatch(/did not stop/)
    // The call is in the durable log (a resume closes it with TOOL_OUTCOME_UNKNOWN).
    expect(eventData(durableEvents(), 'tool/call').map((data) => data.call.id)).toEqual(['c1'])
  }, 30_000)

  it('dsh rpc: during a tool body that ignores cancellation still saves the log and exits 143 within the grace', async () => {
    const patch = join(home, 'stuck.yml')
    const use = fileURLToPath(new URL('fixtures/stuck-tool.mjs', import.meta.url))
    writeFileSync(patch, `- id: stuck\n  use: ${JSON.stringify(use)}\n`)
    const marker = join(home, 'stuck-started')
    server.enqueue(
      completionResponse({ toolCalls: [{ id: 'c1', name: 'stuck', arguments: JSON.stringify({ marker }) }] }),
    )
    const run = dsh(['rpc', '--patch', patch])
    onTestFinished(() => {
      if (run.proc.exitCode === null) run.proc.kill('SIGKILL') // the hang this test guards against
    })
    const send = (message: Record<string, unknown>) =>
      run.proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`)
    send({ id: 1, method: 'initialize' })
    send({ id: 2, method: 'session/create' })
    const created = await new Promise<string>((resolve, reject) => {
      let buffer = ''
      run.proc.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString()
        const match = /"id":2,"result":\{[^}]*"sessionId":"([^"]+)"/.exec(buffer)
        if (match) resolve(match[1] as string)
      })
      run.proc.on('exit', () => reject(new Error(`dsh rpc exited: ${run.stderr()}`)))
    })
    send({ id: 3, method: 'prompt', params: { sessionId: created, text: 'call stuck' } })
    await waitFor(marker, run.stderr)
    const signalled = Date.now()
    run.proc.kill('SIGTERM')
    const exit = await run.exited
    expect(exit.code, exit.stderr).toBe(143)
    expect(Date.now() - signalled).toBeLessThan(12_000)
    expect(exit.stderr).toMatch(/did not stop/)
    expect(eventData(durableEvents(), 'tool/call').map((data) => data.call.id)).toEqual(['c1'])
  }, 30_000)

  it('dsh web: during a tool body that ignores cancellation still saves the log and exits 143 within the grace', async () => {
    const patch = join(home, 'stuck.yml')
    const use = fileURLToPath(new URL('fixtures/stuck-tool.mjs', import.meta.url))
    writeFileSync(patch, `- id: stuck\n  use: ${JSON.stringify(use)}\n`)
    const marker = join(home, 'stuck-started')
    server.enqueue(
      completionResponse({ toolCalls: [{ id: 'c1', name: 'stuck', arguments: JSON.stringify({ marker }) }] }),
    )
    const run = dsh(['web', '--port', '0', '--patch', patch])
    onTestFinished(() => {
      if (run.proc.exitCode === null) run.proc.kill('SIGKILL') // the hang this test guards against
    })
    const url = await new Promise<URL>((resolve, reject) => {
      let buffer = ''
      run.proc.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString()
        const match = /listening on (\S+)/.exec(buffer)
        if (match) resolve(new URL(match[1] as string))
      })
      run.proc.on('exit', () => reject(new Error(`dsh web exited: ${run.stderr()}`)))
    })
    const post = async (path: string, body: unknown) => {
      const response = await fetch(new URL(path, url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-dsh-token': url.searchParams.get('token') ?? '' },
        body: JSON.stringify(body),
      })
      expect(response.ok, await response.clone().text()).toBe(true)
      return (await response.json()) as Record<string, unknown>
    }
    const { sessionId } = (await post('/api/sessions', { cwd: home })) as { sessionId: string }
    await post(`/api/sessions/${sessionId}/prompt`, { text: 'call stuck' })
    await waitFor(marker, run.stderr)
    const signalled = Date.now()
    run.proc.kill('SIGTERM')
    const exit = await run.exited
    expect(exit.code, exit.stderr).toBe(143)
    expect(Date.now() - signalled).toBeLessThan(12_000)
    expect(exit.stderr).toMatch(/did not stop/)
    expect(eventData(durableEvents(), 'tool/call').map((data) => data.call.id)).toEqual(['c1'])
  }, 30_000)
})
