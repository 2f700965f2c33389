// `dsh run` as users run it: the built binary as a child process, DSH_HOME in a temp dir, the model
// behind DEEPSEEK_BASE_URL served by the mock SSE server. Outcomes are read back from the durable log.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type AnySessionEvent, eventData } from '@dsh/session'
import { completionResponse, errorResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startDsh } from './dsh-child.js'

let home: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-run-'))
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

function dsh(args: string[], env: Record<string, string | undefined> = {}) {
  const run = startDsh(args, { home, modelUrl: server.url, env })
  return { proc: run.proc, done: run.exited, stderr: run.stderr }
}

/** The durable log of the only session in DSH_HOME: header plus events, read from disk. */
function durableLog(): { header: Record<string, unknown>; events: AnySessionEvent[] } {
  const files = readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
  expect(files).toHaveLength(1)
  const lines = readFileSync(join(home, 'sessions', files[0] as string), 'utf8')
    .trim()
    .split('\n')
  // Each line ends with its checksum member (`crc`), which is the file's, not the event's.
  const [header, ...events] = lines.map((line) => {
    const { crc: _crc, hash: _hash, ...value } = JSON.parse(line)
    return value
  })
  return { header, events }
}

describe('dsh run', () => {
  it('prints the final answer, exits 0, and leaves a durable session', async () => {
    server.enqueue(completionResponse({ text: ['All ', 'done.'] }))
    const result = await dsh(['run', 'say', 'done']).done
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('All done.\n')
    const log = durableLog()
    expect(log.header).toMatchObject({ type: 'session', version: 0, cwd: home })
    expect(log.events.map((e) => e.seq)).toEqual(log.events.map((_, i) => i))
    expect(log.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
    const user = eventData(log.events, 'user/message').find((data) => !data.origin)
    expect(user?.message.content).toEqual([{ type: 'text', text: 'say done' }])
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-test')
  })

  it('reads the task from stdin with `-`', async () => {
    server.enqueue(completionResponse({ text: 'ok' }))
    const run = dsh(['run', '-'])
    run.proc.stdin?.end('task from stdin\n')
    const result = await run.done
    expect(result.code).toBe(0)
    const user = eventData(durableLog().events, 'user/message').find((data) => !data.origin)
    expect(user?.message.content).toEqual([{ type: 'text', text: 'task from stdin' }])
  })

  it('streams committed events as JSON lines ending with a summary', async () => {
    server.enqueue(completionResponse({ text: 'streamed' }))
    const result = await dsh(['run', '--output', 'stream-json', 'go']).done
    expect(result.code).toBe(0)
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    const summary = lines.at(-1)
    expect(summary).toMatchObject({ type: 'summary', reason: 'completed', text: 'streamed', turns: 1 })
    expect(summary.usage).toMatchObject({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) })
    const events = lines.slice(0, -1)
    expect(events.map((e) => e.type)).toContain('assistant/message')
    expect(events.at(-1).type).toBe('turn/end')
    // Exactly the durable log, event for event.
    expect(events).toEqual(durableLog().events)
    expect(summary.sessionId).toBe(durableLog().header.id)
  })

  it('exits 6 when the provider keeps failing after the bounded retries, with the reason on stderr', async () => {
    // The base profile retries 5xx with backoff; a patch shortens it (the whole row is restated).
    const patch = join(home, 'fast-retry.yml')
    writeFileSync(patch, '- id: context-retry\n  config: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 }\n')
    for (let i = 0; i < 3; i++) server.enqueue(errorResponse(500, 'the server had an error'))
    const result = await dsh(['--patch', patch, 'run', 'go']).done
    expect(server.requests).toHaveLength(3)
    expect(result.code).toBe(6)
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(/^dsh: turn failed: .*server had an error/m)
    expect(durableLog().events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'error' } })
  })

  it('exits 3 with one clear line when the key is missing', async () => {
    const result = await dsh(['run', 'go'], { DEEPSEEK_API_KEY: undefined }).done
    expect(result.code).toBe(3)
    expect(result.stderr).toBe(
      'dsh: turn failed: no API key for DeepSeek: set DEEPSEEK_API_KEY in the environment, with dsh config set DEEPSEEK_API_KEY KEY, or in a .env file\ndsh: no model answered, so no session was kept\n',
    )
    expect(server.requests).toHaveLength(0)
  })

  it('exits 3 when the endpoint is unreachable', async () => {
    const result = await dsh(['run', 'go'], { DEEPSEEK_BASE_URL: 'http://127.0.0.1:9' }).done
    expect(result.code).toBe(3)
    // Retry lines first (one per attempt), then the ending.
    expect(result.stderr).toMatch(/^dsh: turn failed: .*127\.0\.0\.1:9/m)
    expect(result.stderr).toContain('dsh: no model answered, so no session was kept')
  })

  it('on SIGINT mid-stream cancels, saves, exits 130; --resume continues the same session', async () => {
    server.enqueue({ type: 'sse', steps: [{ hang: true }] })
    const run = dsh(['run', 'long task'])
    await server.waitForRequests(1, 10_000)
    run.proc.kill('SIGINT')
    const first = await run.done
    expect(first.code).toBe(130)
    const interrupted = durableLog()
    expect(interrupted.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    const id = interrupted.header.id as string
    expect(first.stderr).toContain(`dsh run --resume ${id}`)

    server.enqueue(completionResponse({ text: 'resumed and finished' }))
    const second = await dsh(['run', '--resume', id, 'please finish']).done
    expect(second.code).toBe(0)
    expect(second.stdout).toBe('resumed and finished\n')
    const log = durableLog()
    expect(log.header.id).toBe(id)
    expect(eventData(log.events, 'turn/end').map((end) => end.reason)).toEqual(['aborted', 'completed'])
    const messages = server.requests[1]?.body.messages as Array<{ role: string; content: string }>
    expect(
      messages.filter((m) => m.role === 'user' && !m.content.startsWith('Sandbox:')).map((m) => m.content),
    ).toEqual(['long task', 'please finish'])
  })

  it('does a multi-step coding task in a temp repo: files really change, the tests really pass', async () => {
    const project = join(home, 'project')
    cpSync(fileURLToPath(new URL('../demo/sample-project', import.meta.url)), project, { recursive: true })
    const call = (id: string, name: string, args: Record<string, unknown>) =>
      completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })
    server.enqueue(
      call('c1', 'bash', { command: 'node test.js' }),
      call('c2', 'read', { path: 'cart.js' }),
      call('c3', 'edit', {
        path: 'cart.js',
        old_string: 'item.price + item.quantity',
        new_string: 'item.price * item.quantity',
      }),
      call('c4', 'bash', { command: 'node test.js' }),
      completionResponse({ text: 'Fixed: total multiplies price by quantity now; all tests pass.' }),
    )
    const result = await dsh(['run', '--cwd', project, 'fix the failing tests']).done
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Fixed: total multiplies price by quantity now; all tests pass.\n')
    expect(readFileSync(join(project, 'cart.js'), 'utf8')).toContain('sum += item.price * item.quantity')
    expect(spawnSync(process.execPath, ['test.js'], { cwd: project }).status).toBe(0)
    // The model saw the real failing output first, then the real passing output.
    const toolOutputs = server.requests.slice(1).map((request) => {
      const messages = request.body.messages as Array<{ role: string; content: string }>
      return messages.filter((m) => m.role === 'tool').at(-1)?.content ?? ''
    })
    expect(toolOutputs[0]).toContain('2 of 3 tests failed')
    expect(toolOutputs[3]).toContain('all 3 tests passed')
  })

  it('on SIGINT during a tool body stops the process tree, saves, exits 130, and resumes', async () => {
    const marker = join(home, 'sleep-started')
    server.enqueue(
      completionResponse({
        toolCalls: [
          { id: 'c1', name: 'bash', arguments: JSON.stringify({ command: `touch ${marker}; sleep 30; echo never` }) },
        ],
      }),
    )
    const run = dsh(['run', 'run the long command'])
    const started = Date.now()
    while (!existsSync(marker)) {
      if (Date.now() - started > 15_000) throw new Error(`the tool never started:\n${run.stderr()}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    run.proc.kill('SIGINT')
    const first = await run.done
    expect(first.code).toBe(130)
    const log = durableLog()
    const result = log.events.find((e) => e.type === 'tool/result') as
      | { data: { message: { content: Array<{ text: string }> } } }
      | undefined
    expect(result?.data.message.content[0]?.text).toMatch(
      /\[aborted: the command was cancelled and its process tree was killed\]/,
    )
    expect(log.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    // No `sleep 30` survives the cancelled call.
    const survivors = spawnSync('pgrep', ['-f', 'sleep 30; echo never'], { encoding: 'utf8' }).stdout.trim()
    expect(survivors).toBe('')

    server.enqueue(completionResponse({ text: 'skipped the long command' }))
    const second = await dsh(['run', '--resume', log.header.id as string, 'skip it']).done
    expect(second.code).toBe(0)
    expect(second.stdout).toBe('skipped the long command\n')
  })

  it('--continue picks the latest session of this directory', async () => {
    server.enqueue(completionResponse({ text: 'one' }), completionResponse({ text: 'two' }))
    expect((await dsh(['run', 'first']).done).code).toBe(0)
    const second = await dsh(['run', '--continue', 'second']).done
    expect(second.code).toBe(0)
    expect(durableLog().events.filter((e) => e.type === 'turn/end')).toHaveLength(2)
    // A /command runs through ctx.commands on that session, without a model turn.
    const plan = await dsh(['run', '--continue', '/plan on']).done
    expect(plan.code).toBe(0)
    expect(durableLog().events.filter((e) => e.type === 'plan/mode')).toHaveLength(1)
    expect(server.requests).toHaveLength(2)
    expect(plan.stdout.trim()).not.toBe('')
  })
})
