// Tool search (issue 33): the built `dsh` with a real MCP server from npm (server-everything, 13 tools)
// against the mock model. With search on (auto: the MCP tools plus the rarely used built-ins pass the
// threshold) the first request carries tool_search and no deferred schema; a tool_search call loads
// one, the next request carries its schema, the model calls it; resume and replay derive the same
// requests from the log; `tools.search off` sends everything; /context reports what was not sent.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { ToolSchema } from '@dsh/llm'
import { type AnySessionEvent, eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, type MockResponse, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { durableEvents, runDsh, spawnDsh } from './dsh-child.js'

vi.setConfig({ testTimeout: 90_000, hookTimeout: 30_000 })

const require = createRequire(import.meta.url)
function serverBin(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`)
  const bin = (require(manifest) as { bin: Record<string, string> }).bin
  return join(dirname(manifest), Object.values(bin)[0] as string)
}

const SUM = 'mcp__everything__get-sum'
let home: string
let patch: string
let server: MockLlmServer
const chat: MockResponse[] = []

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-tool-search-'))
  patch = join(home, 'mcp.yml')
  writeFileSync(
    patch,
    [
      '- id: mcp',
      '  use: "@dsh/bridges/mcp/manager"',
      '  config:',
      '    mcpJson: false',
      '    servers:',
      `      everything: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(serverBin('@modelcontextprotocol/server-everything'))}, stdio] }`,
      '',
    ].join('\n'),
  )
  chat.length = 0
  server = await startMockLlmServer({ respond: () => chat.shift() ?? completionResponse({ text: 'unscripted' }) })
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

const dsh = (args: string[]) => runDsh(['--patch', patch, ...args], { home, modelUrl: server.url })
const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

/** The tool schemas of every logged request, bodies resolved through their content hashes. */
function loggedTools(events: AnySessionEvent[]): ToolSchema[][] {
  const bodies = new Map<string, readonly ToolSchema[]>()
  return eventData(events, 'request/header').map((header) => {
    if (header.tools && header.toolsHash) bodies.set(header.toolsHash, header.tools)
    const tools = header.tools ?? (header.toolsHash ? bodies.get(header.toolsHash) : undefined)
    if (!tools) throw new Error('a request/header without its tools')
    return [...tools]
  })
}
const names = (tools: ToolSchema[]) => tools.map((tool) => tool.name)
/** Tokens of a request's tool schemas as the wire carried them (4 characters a token). */
const wireTokens = (index: number) => Math.round(JSON.stringify(server.requests[index]?.body.tools ?? []).length / 4)

describe('tool search', () => {
  it('sends tool_search instead of the deferred schemas, loads one on demand, and resume and replay agree', async () => {
    chat.push(
      call('c1', 'tool_search', { query: 'add two numbers sum' }),
      call('c2', SUM, { a: 2, b: 3 }),
      completionResponse({ text: 'five' }),
    )
    const run = await dsh(['run', '--output', 'json', 'add 2 and 3'])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const { sessionId } = JSON.parse(run.stdout) as { sessionId: string }
    const events = durableEvents(home)
    const [first, second, third] = loggedTools(events)
    // The first request: tool_search (its description the catalog), no MCP schema, no deferred built-in.
    expect(names(first ?? [])).toContain('tool_search')
    expect(names(first ?? []).filter((name) => name.startsWith('mcp__'))).toEqual([])
    expect(names(first ?? [])).not.toContain('terminal_open')
    expect(names(first ?? [])).toContain('bash')
    const search = first?.find((tool) => tool.name === 'tool_search')
    expect(search?.description).toContain('mcp__everything__{')
    expect(search?.description).toContain('get-sum')
    // What the wire carried is what the log says.
    expect(server.requests[0]?.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toEqual(
      names(first ?? []),
    )
    // tool_search found get-sum and said so; the next request carries its schema.
    const [searched, summed] = eventData(events, 'tool/result')
    expect(searched?.message.toolName).toBe('tool_search')
    expect(searched?.message.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringMatching(/^Loaded tools: .*mcp__everything__get-sum/),
    })
    expect(names(second ?? [])).toContain(SUM)
    expect(second?.find((tool) => tool.name === SUM)?.parameters).toMatchObject({ properties: { a: {}, b: {} } })
    // The model called it and the server answered.
    expect(summed?.message).toMatchObject({ toolName: SUM, isError: false })
    expect(summed?.message.content[0]).toMatchObject({ text: 'The sum of 2 and 3 is 5.' })
    expect(third).toEqual(second)

    // Resume: a new process derives the loaded set from the log and sends the same tools.
    chat.push(completionResponse({ text: 'again' }))
    const resumed = await dsh(['run', '--resume', sessionId, 'and again'])
    expect(resumed.code).toBe(0)
    const after = loggedTools(durableEvents(home))
    expect(after).toHaveLength(4)
    expect(after[3]).toEqual(second)

    // Replay with the logged tool results: every request rebuilt byte for byte (exit 0, no divergence).
    const replay = await dsh(['replay', sessionId, '--tools', 'log'])
    expect(replay.stdout).toContain('no divergence: every request and tool result is the logged one')
    expect(replay.code).toBe(0)
  })

  it('tools.search off sends every schema; the saving is measured on the wire', async () => {
    chat.push(completionResponse({ text: 'on' }), completionResponse({ text: 'off' }))
    expect((await dsh(['run', 'hi'])).code).toBe(0)
    rmSync(join(home, 'sessions'), { recursive: true, force: true })
    expect((await dsh(['--set', 'tools.search=off', 'run', 'hi'])).code).toBe(0)
    const all = names(loggedTools(durableEvents(home))[0] ?? [])
    expect(all).not.toContain('tool_search')
    expect(all.filter((name) => name.startsWith('mcp__everything__')).length).toBeGreaterThanOrEqual(10)
    expect(all).toContain('terminal_open')
    const on = wireTokens(0)
    const off = wireTokens(1)
    console.log(`tool schemas of the first request: search on ~${on} tokens, off ~${off} tokens`)
    expect(on).toBeLessThan(off - 2000)
  })

  it('/context names the deferred schemas a request did not carry', async () => {
    chat.push(completionResponse({ text: 'hello' }))
    const proc = spawnDsh(['--patch', patch, 'rpc'], { home, modelUrl: server.url })
    const messages: Array<Record<string, unknown>> = []
    let buffer = ''
    let stderr = ''
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk
      const lines = buffer.split('\n')
      buffer = lines.pop() ?? ''
      for (const line of lines) if (line.trim()) messages.push(JSON.parse(line))
    })
    const exit = new Promise<number | null>((resolve) => proc.on('exit', resolve))
    const until = <T>(find: () => T | undefined, what: string) =>
      new Promise<T>((resolve, reject) => {
        const started = Date.now()
        const timer = setInterval(() => {
          const found = find()
          if (found !== undefined) {
            clearInterval(timer)
            resolve(found)
          } else if (Date.now() - started > 30_000) {
            clearInterval(timer)
            reject(new Error(`timed out waiting for ${what}; stderr:\n${stderr}`))
          }
        }, 20)
      })
    let nextId = 0
    const rpc = async (method: string, params: Record<string, unknown>) => {
      const id = ++nextId
      proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
      return until(() => messages.find((message) => message.id === id), `the answer to ${method}`)
    }
    try {
      await rpc('initialize', {})
      const created = (await rpc('session/create', {})).result as { sessionId: string }
      await rpc('prompt', { sessionId: created.sessionId, text: 'hi' })
      // Idle after running: the turn is over and the session flushed.
      const status = (message: Record<string, unknown>) =>
        message.method === 'agent/status' && message.params && typeof message.params === 'object'
          ? (message.params as Record<string, unknown>).status
          : undefined
      await until(() => {
        const running = messages.findIndex((message) => status(message) === 'running')
        return running >= 0 && messages.slice(running).some((message) => status(message) === 'idle') ? true : undefined
      }, 'the turn to end')
      const answer = (await rpc('command/run', { sessionId: created.sessionId, line: '/context' })).result as {
        ok: boolean
        text: string
      }
      expect(answer.ok).toBe(true)
      expect(answer.text).toMatch(/tool schemas \(\d+ tools\)/)
      expect(answer.text).toMatch(/ {2}not sent: 2\d deferred tool schemas \(tool_search loads them on demand/)
      const saved = Number(/([\d,]+) {2}not sent/.exec(answer.text)?.[1]?.replace(/,/g, ''))
      expect(saved).toBeGreaterThan(2000)
      await rpc('shutdown', {})
      expect(await exit).toBe(0)
    } finally {
      proc.kill()
    }
  })
})
