import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import LocalAttachments from '@dsh/attachments/local'
import { FolderTrust } from '@dsh/settings/trust'
import { isAlive } from '@dsh/test-support'
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import { checkServer } from '../../src/mcp/config.js'
import { bridgedToolName } from '../../src/mcp/index.js'
import { calls, createDsh, dataOf, everything, filesystem, signal, tempDir, text, until } from './harness.js'

// Real child processes on a shared, loaded machine: generous bounds, few slow steps.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  type: 'tool-call' as const,
  id,
  name,
  arguments: args,
})

describe('MCP client against server-everything (stdio)', () => {
  // One server for the tests that leave it as they found it (listeners are removed after each test).
  let shared: Awaited<ReturnType<typeof createDsh>>
  beforeAll(async () => {
    shared = await createDsh({ servers: { everything: everything() } }, [
      calls(['c1', 'mcp__everything__echo', { message: 'from the loop' }]),
      text('done'),
    ])
  })
  afterAll(() => shared?.[Symbol.asyncDispose]())

  it('lists the tools as mcp__<server>__<tool>, calls them through the pipeline, and converts non-text content', async () => {
    const { root } = shared
    const [status] = root.mcp.servers()
    expect(status).toMatchObject({ name: 'everything', state: 'ready', transport: 'stdio', restarts: 0 })
    const names = root.tools.list().map((tool) => tool.name)
    expect(names).toEqual(expect.arrayContaining(['mcp__everything__echo', 'mcp__everything__get-sum']))
    expect(names.every((name) => /^[A-Za-z0-9_-]{1,64}$/.test(name))).toBe(true)

    const sum = await root.tools.executeCall(call('c1', 'mcp__everything__get-sum', { a: 2, b: 3 }), {
      signal: signal(),
    })
    expect(sum).toMatchObject({ isError: false, content: [{ type: 'text', text: 'The sum of 2 and 3 is 5.' }] })

    const image = await root.tools.executeCall(call('c2', 'mcp__everything__get-tiny-image', {}), { signal: signal() })
    expect(image.isError).toBe(false)
    expect(image.content).toHaveLength(1)
    expect(image.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringMatching(/\[image image\/png, \d+ bytes: not shown to the model\]/),
    })
    expect(image.details).toMatchObject({ attachments: [{ kind: 'image', mimeType: 'image/png' }] })

    const links = await root.tools.executeCall(call('c3', 'mcp__everything__get-resource-links', { count: 2 }), {
      signal: signal(),
    })
    expect(links.content[0]).toMatchObject({ text: expect.stringContaining('[resource link') })
  })

  it('stores image results in the attachment store and shows them to the model by reference', async () => {
    const { root } = shared
    using dir = tempDir()
    const fiber = root.plugin(LocalAttachments, { dir: dir.path })
    await fiber
    try {
      const image = await root.tools.executeCall(call('c9', 'mcp__everything__get-tiny-image', {}), {
        signal: signal(),
      })
      const block = image.content.find((item) => item.type === 'image')
      expect(block).toMatchObject({
        type: 'image',
        mimeType: 'image/png',
        ref: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      })
      expect(image.content[0]).toMatchObject({
        text: expect.stringMatching(/\[image image\/png, \d+ bytes: attached\]/),
      })
      // The blob is on disk and hashes to its reference (get verifies it).
      const bytes = await root.attachments.get((block as { ref: string }).ref)
      expect(bytes.byteLength).toBeGreaterThan(0)
      expect(image.details).toMatchObject({ attachments: [{ kind: 'image', ref: (block as { ref: string }).ref }] })
    } finally {
      await fiber.dispose()
    }
  })

  it('validates arguments against the server schema and returns server errors as error results', async () => {
    const { root } = shared
    const bad = await root.tools.executeCall(call('c1', 'mcp__everything__get-sum', { a: 'two' }), { signal: signal() })
    expect(bad).toMatchObject({ isError: true, errorCode: 'INVALID_ARGUMENTS' })
    // The server throws in its handler (unsupported URL protocol): an isError result the model reads.
    const failed = await root.tools.executeCall(
      call('c2', 'mcp__everything__gzip-file-as-resource', { name: 'x.gz', data: 'ftp://example.invalid/x' }),
      { signal: signal() },
    )
    expect(failed).toMatchObject({ isError: true, errorCode: 'TOOL_ERROR' })
    expect(failed.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Unsupported URL protocol') })
    const unknown = await root.tools.executeCall(call('c3', 'mcp__everything__nope', {}), { signal: signal() })
    expect(unknown).toMatchObject({ isError: true, errorCode: 'UNKNOWN_TOOL' })
  })

  it('restarts a crashed server with backoff, reports it, and serves calls again; dispose ends the process', async () => {
    const events: string[] = []
    await using dsh = await createDsh({
      servers: { everything: everything() },
      restart: { initialDelayMs: 200, maxRestarts: 3 },
    })
    const { root } = dsh
    root.on('mcp/status', (status) => {
      events.push(status.state)
    })
    const first = root.mcp.servers()[0]?.pid as number
    expect(isAlive(first)).toBe(true)
    process.kill(first, 'SIGKILL')
    const during = await until(() => root.mcp.servers()[0]?.state === 'restarting' && root.mcp.servers()[0])
    expect(during.error).toMatch(/connection closed/)
    const down = await root.tools.executeCall(call('c0', 'mcp__everything__echo', { message: 'x' }), {
      signal: signal(),
    })
    if (down.isError) expect(down.errorCode).toBe('MCP_SERVER_UNAVAILABLE')
    const back = await until(() => root.mcp.servers()[0]?.state === 'ready' && root.mcp.servers()[0])
    expect(back.restarts).toBe(1)
    expect(back.pid).not.toBe(first)
    expect(events).toEqual(expect.arrayContaining(['restarting', 'connecting', 'ready']))
    const echo = await root.tools.executeCall(call('c1', 'mcp__everything__echo', { message: 'again' }), {
      signal: signal(),
    })
    expect(echo).toMatchObject({ isError: false, content: [{ type: 'text', text: 'Echo: again' }] })
    await dsh.fiber.dispose()
    expect(root.tools.list().filter((tool) => tool.name.startsWith('mcp__'))).toEqual([])
    await until(() => !isAlive(back.pid as number))
  })

  it('gives up after the bounded restarts and unregisters the tools', async () => {
    await using dsh = await createDsh({
      servers: { broken: { command: process.execPath, args: ['-e', 'process.exit(3)'] } },
      restart: { initialDelayMs: 10, maxRestarts: 2 },
      startupTimeoutMs: 5_000,
    })
    const failed = await until(() => dsh.root.mcp.servers()[0]?.state === 'failed' && dsh.root.mcp.servers()[0])
    expect(failed).toMatchObject({ restarts: 2, tools: [] })
    expect(failed.error).toMatch(/gave up after 2 restarts/)
  })

  it('applies approval to an MCP tool: an ask goes to the answerer, a rejection keeps the body from running', async () => {
    const { root } = shared
    const off = root.on('tools/pre-execute', async (input, next) =>
      input.toolName.startsWith('mcp__') ? { action: 'ask', summary: `run ${input.toolName}` } : next(),
    )
    onTestFinished(() => void off())
    const asked: string[] = []
    onTestFinished(
      root.approval.answer((question) => {
        asked.push(question.toolName ?? '')
        return question.toolName?.endsWith('echo') ? 'allowed-once' : 'rejected'
      }),
    )
    const echo = await root.tools.executeCall(call('c1', 'mcp__everything__echo', { message: 'ok' }), {
      signal: signal(),
    })
    expect(echo).toMatchObject({ isError: false, content: [{ text: 'Echo: ok' }] })
    const sum = await root.tools.executeCall(call('c2', 'mcp__everything__get-sum', { a: 1, b: 2 }), {
      signal: signal(),
    })
    expect(sum).toMatchObject({ isError: true, errorCode: 'APPROVAL_REJECTED', bodyInvoked: false })
    expect(asked).toEqual(['mcp__everything__echo', 'mcp__everything__get-sum'])
  })

  it('runs an MCP tool through the agent loop with approval and commits the durable tool/result', async () => {
    const { root } = shared
    const off = root.on('tools/pre-execute', async (input, next) =>
      input.toolName === 'mcp__everything__echo' ? { action: 'ask' } : next(),
    )
    onTestFinished(() => void off())
    onTestFinished(root.approval.answer(() => 'allowed-once'))
    const agent = await root.agents.create()
    agent.followup('echo something')
    await agent.whenIdle()
    const results = dataOf(agent.session, 'tool/result')
    expect(results.map((result) => result.message)).toEqual([
      {
        role: 'tool',
        toolCallId: 'c1',
        toolName: 'mcp__everything__echo',
        content: [{ type: 'text', text: 'Echo: from the loop' }],
        isError: false,
      },
    ])
    const kinds = agent.session.events.map((event) => event.type).filter((type) => /^(tool|approval)\//.test(type))
    expect(kinds).toEqual(['tool/call', 'approval/asked', 'approval/decided', 'tool/result'])
    await agent.dispose()
  })
})

describe('MCP client against server-filesystem (stdio)', () => {
  it('reads and writes inside the allowed directory and reports access outside it as an error result', async () => {
    using dir = tempDir()
    using outside = tempDir()
    writeFileSync(join(dir.path, 'a.txt'), 'alpha\n')
    await using dsh = await createDsh({ servers: { fs: filesystem(dir.path) } })
    const { root } = dsh
    expect(root.mcp.servers()[0]).toMatchObject({ state: 'ready' })
    const read = await root.tools.executeCall(
      call('c1', 'mcp__fs__read_text_file', { path: join(dir.path, 'a.txt') }),
      {
        signal: signal(),
      },
    )
    expect(read).toMatchObject({ isError: false, content: [{ type: 'text', text: 'alpha\n' }] })
    const write = await root.tools.executeCall(
      call('c2', 'mcp__fs__write_file', { path: join(dir.path, 'b.txt'), content: 'beta' }),
      { signal: signal() },
    )
    expect(write.isError).toBe(false)
    expect(readFileSync(join(dir.path, 'b.txt'), 'utf8')).toBe('beta')
    const denied = await root.tools.executeCall(
      call('c3', 'mcp__fs__read_text_file', { path: join(outside.path, 'x.txt') }),
      { signal: signal() },
    )
    expect(denied.isError).toBe(true)
    expect(denied.content[0]).toMatchObject({ text: expect.stringMatching(/Access denied|outside allowed/) })
  })
})

describe('bridged tool names', () => {
  it('keeps valid names and shortens or cleans others deterministically with a hash suffix', () => {
    expect(bridgedToolName('fs', 'read_file')).toBe('mcp__fs__read_file')
    const dotted = bridgedToolName('my.server', 'do it')
    expect(dotted).toMatch(/^mcp__my_server__do_it_[0-9a-f]{8}$/)
    expect(bridgedToolName('my.server', 'do it')).toBe(dotted)
    expect(bridgedToolName('my_server', 'do_it')).toBe('mcp__my_server__do_it')
    const long = bridgedToolName('server', 'x'.repeat(100))
    expect(long).toHaveLength(64)
    expect(long).not.toBe(bridgedToolName('server', `${'x'.repeat(99)}y`))
  })
})

describe('MCP client with a server whose tools change', () => {
  const dynamic = () => ({
    command: process.execPath,
    args: [join(import.meta.dirname, 'fixtures', 'dynamic-server.mjs')],
  })

  it('refreshes the registry on notifications/tools/list_changed', async () => {
    await using dsh = await createDsh({ servers: { dyn: dynamic() } })
    const { root } = dsh
    const names = () => root.tools.list().map((tool) => tool.name)
    expect(names()).toEqual(['mcp__dyn__die', 'mcp__dyn__grow', 'mcp__dyn__huge', 'mcp__dyn__shrink'])
    await root.tools.executeCall(call('c1', 'mcp__dyn__grow', {}), { signal: signal() })
    await until(() => names().includes('mcp__dyn__grown'))
    const grown = await root.tools.executeCall(call('c2', 'mcp__dyn__grown', {}), { signal: signal() })
    expect(grown).toMatchObject({ isError: false, content: [{ text: 'grown ok' }] })
    await root.tools.executeCall(call('c3', 'mcp__dyn__shrink', {}), { signal: signal() })
    await until(() => !names().includes('mcp__dyn__grown'))
    expect(root.mcp.servers()[0]?.tools).toEqual([
      'mcp__dyn__die',
      'mcp__dyn__grow',
      'mcp__dyn__huge',
      'mcp__dyn__shrink',
    ])
  })

  it('attaches servers to one scope: tools only in its layer, literal values, stopped with the scope', async () => {
    await using dsh = await createDsh({})
    const { root } = dsh
    await expect(
      root.mcp.attach({ 'bad name': { command: '' } }, { cwd: tmpdir(), source: 'test', layer: { agentId: 'a1' } }),
    ).rejects.toMatchObject({ code: 'MCP_CONFIG_INVALID', message: expect.stringContaining('command must be') })
    // A caller's values are literal: no `${VAR}` expansion from this process's environment.
    const literal = ['$', '{HOME}/bin'].join('')
    expect(checkServer('x', { command: literal }, undefined).config).toMatchObject({ command: literal })
    const scope = root.plugin({ name: 'owner', inject: ['mcp'], apply: () => {} })
    await scope
    const attached = await scope.ctx.mcp.attach(
      { dyn: dynamic() },
      { cwd: tmpdir(), source: 'session s1', layer: { agentId: 'a1' } },
    )
    await attached.whenSettled()
    const [status] = attached.servers()
    expect(status).toMatchObject({ name: 'dyn', source: 'session s1', state: 'ready' })
    const names = (scope: { agentId?: string }) => root.tools.list(scope).map((tool) => tool.name)
    expect(names({ agentId: 'a1' })).toEqual(['mcp__dyn__die', 'mcp__dyn__grow', 'mcp__dyn__huge', 'mcp__dyn__shrink'])
    expect(names({})).toEqual([])
    expect(names({ agentId: 'a2' })).toEqual([])
    expect(root.mcp.servers()).toEqual([])
    await scope.dispose()
    expect(names({ agentId: 'a1' })).toEqual([])
    await until(() => !isAlive(status?.pid as number))
  })

  it('turns a server that dies mid-call into an error result, then restarts it', async () => {
    await using dsh = await createDsh({ servers: { dyn: dynamic() }, restart: { initialDelayMs: 50 } })
    const { root } = dsh
    const died = await root.tools.executeCall(call('c1', 'mcp__dyn__die', {}), { signal: signal() })
    expect(died).toMatchObject({ isError: true, errorCode: 'MCP_SERVER_UNAVAILABLE' })
    await until(() => root.mcp.servers()[0]?.state === 'ready' && root.mcp.servers()[0]?.restarts === 1)
    const grow = await root.tools.executeCall(call('c2', 'mcp__dyn__grow', {}), { signal: signal() })
    expect(grow).toMatchObject({ isError: false, content: [{ text: 'grew' }] })
  })
})

describe('result bounds', () => {
  const dynamic = () => ({
    command: process.execPath,
    args: [join(import.meta.dirname, 'fixtures', 'dynamic-server.mjs')],
  })

  it('refuses a result message over maxMessageBytes while it arrives, names the option, and restarts the server', async () => {
    await using dsh = await createDsh({
      servers: { dyn: dynamic() },
      maxMessageBytes: 1_000_000,
      restart: { initialDelayMs: 50 },
    })
    const { root } = dsh
    const huge = await root.tools.executeCall(call('c1', 'mcp__dyn__huge', {}), { signal: signal() })
    expect(huge).toMatchObject({ isError: true, errorCode: 'MCP_RESULT_TOO_LARGE' })
    // What is kept is the refusal, not 30 MB.
    expect(JSON.stringify(huge.content).length).toBeLessThan(1_000)
    expect(JSON.stringify(huge.content)).toContain('maxMessageBytes')
    await until(() => root.mcp.servers()[0]?.state === 'ready' && root.mcp.servers()[0]?.restarts === 1)
    const grow = await root.tools.executeCall(call('c2', 'mcp__dyn__grow', {}), { signal: signal() })
    expect(grow).toMatchObject({ isError: false, content: [{ text: 'grew' }] })
  })
})

describe('.mcp.json discovery', () => {
  it('reads the project file with variable expansion and skips an unsupported entry without failing', async () => {
    using dir = tempDir()
    process.env.DSH_MCP_TEST_BIN = everything().args[0]
    writeFileSync(
      join(dir.path, '.mcp.json'),
      JSON.stringify({
        mcpServers: {
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the .mcp.json expansion syntax
          project: { command: process.execPath, args: ['${DSH_MCP_TEST_BIN}', '${DSH_MCP_TEST_MODE:-stdio}'] },
          broken: { type: 'sse', url: 'http://127.0.0.1:1/sse' },
        },
      }),
    )
    // Untrusted, the project's servers do not start; trusted (as this content), they do.
    const saved = process.env.DSH_HOME
    process.env.DSH_HOME = join(dir.path, 'home')
    await using untrusted = await createDsh({ mcpJson: true, cwd: dir.path })
    expect(untrusted.root.mcp.servers()).toEqual([])
    new FolderTrust(join(dir.path, 'home')).grant(dir.path)
    await using dsh = await createDsh({ mcpJson: true, cwd: dir.path })
    if (saved === undefined) delete process.env.DSH_HOME
    else process.env.DSH_HOME = saved
    expect(dsh.root.mcp.servers()).toEqual([
      expect.objectContaining({ name: 'project', source: join(dir.path, '.mcp.json'), state: 'ready' }),
    ])
    expect(dsh.root.tools.get('mcp__project__echo')).toBeDefined()
    delete process.env.DSH_MCP_TEST_BIN
  })
})

describe('MCP client over Streamable HTTP', () => {
  it('connects to server-everything in streamableHttp mode and calls a tool', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000)
    const child = spawn(process.execPath, [everything().args[0] as string, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    try {
      await new Promise<void>((resolve, reject) => {
        let seen = ''
        child.stderr.on('data', (chunk: Buffer) => {
          seen += chunk.toString()
          if (seen.includes('listening')) resolve()
        })
        child.on('exit', () => reject(new Error(`server exited: ${seen}`)))
      })
      await using dsh = await createDsh({ servers: { web: { type: 'http', url: `http://127.0.0.1:${port}/mcp` } } })
      expect(dsh.root.mcp.servers()[0]).toMatchObject({ state: 'ready', transport: 'http' })
      const sum = await dsh.root.tools.executeCall(call('c1', 'mcp__web__get-sum', { a: 20, b: 22 }), {
        signal: signal(),
      })
      expect(sum).toMatchObject({ isError: false, content: [{ text: 'The sum of 20 and 22 is 42.' }] })
    } finally {
      child.kill('SIGKILL')
    }
  })
})

describe('result bounds over Streamable HTTP', () => {
  // A hand-written HTTP MCP server: JSON answers for the handshake and `small`; the `endless-*` tools
  // answer a body that never ends (a JSON body, or one SSE event without its blank line); `chatty-sse`
  // sends 3 MB of small SSE events before its result (bounded per event, so not cut).
  async function startHttpServer() {
    const stats = { cut: 0, written: 0 }
    const server = createServer((req, res) => {
      if (req.method !== 'POST') {
        res.writeHead(req.method === 'DELETE' ? 200 : 405).end()
        return
      }
      let raw = ''
      req.on('data', (chunk: Buffer) => {
        raw += chunk.toString()
      })
      req.on('end', () => {
        const message = JSON.parse(raw) as { id?: number; method: string; params?: Record<string, unknown> }
        if (message.id === undefined) {
          res.writeHead(202).end()
          return
        }
        const reply = (result: unknown) =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }))
        if (message.method === 'initialize') {
          return reply({
            protocolVersion: message.params?.protocolVersion,
            capabilities: { tools: {} },
            serverInfo: { name: 'endless', version: '1.0.0' },
          })
        }
        if (message.method === 'tools/list') {
          const tool = (name: string) => ({ name, inputSchema: { type: 'object' } })
          return reply({ tools: ['small', 'endless-json', 'endless-sse', 'chatty-sse'].map(tool) })
        }
        const name = (message.params as { name: string }).name
        const result = JSON.stringify({
          jsonrpc: '2.0',
          id: message.id,
          result: { content: [{ type: 'text', text: 'ok' }] },
        })
        if (name === 'small') return res.writeHead(200, { 'content-type': 'application/json' }).end(result)
        if (name === 'chatty-sse') {
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          for (let i = 0; i < 3000; i++) res.write(`: ${'k'.repeat(1000)}\n\n`)
          return res.end(`event: message\ndata: ${result}\n\n`)
        }
        const sse = name === 'endless-sse'
        res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json' })
        let closed = false
        let wake = () => {}
        res.on('drain', () => wake())
        res.on('close', () => {
          closed = true
          stats.cut++
          wake()
        })
        const chunk = 'z'.repeat(64 * 1024)
        void (async () => {
          res.write(
            `${sse ? 'event: message\ndata: ' : ''}{"jsonrpc":"2.0","id":${message.id},"result":{"content":[{"type":"text","text":"`,
          )
          while (!closed) {
            stats.written += chunk.length
            if (!res.write(chunk))
              await new Promise<void>((resolve) => {
                wake = resolve
              })
          }
        })()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    return {
      url: `http://127.0.0.1:${port}/mcp`,
      stats,
      close: () => {
        server.closeAllConnections()
        return new Promise((resolve) => server.close(resolve))
      },
    }
  }

  it.each(['endless-json', 'endless-sse'])(
    '%s: a body that never ends is cut at maxMessageBytes while it arrives, and the server is restarted',
    async (tool) => {
      const server = await startHttpServer()
      onTestFinished(async () => {
        await server.close()
      })
      await using dsh = await createDsh({
        servers: { web: { type: 'http', url: server.url } },
        maxMessageBytes: 1_000_000,
        callTimeoutMs: 30_000,
        restart: { initialDelayMs: 50 },
      })
      const { root } = dsh
      expect(root.mcp.servers()[0]).toMatchObject({ state: 'ready', transport: 'http' })
      const started = Date.now()
      const cut = await root.tools.executeCall(call('c1', `mcp__web__${tool}`, {}), { signal: signal() })
      expect(cut).toMatchObject({ isError: true, errorCode: 'MCP_RESULT_TOO_LARGE' })
      expect(JSON.stringify(cut.content)).toContain('maxMessageBytes')
      expect(Date.now() - started).toBeLessThan(20_000)
      // dsh hung up: the server saw its response closed, having written little past the bound.
      await until(() => server.stats.cut === 1)
      expect(server.stats.written).toBeLessThan(50_000_000)
      await until(() => root.mcp.servers()[0]?.state === 'ready' && root.mcp.servers()[0]?.restarts === 1)
      const small = await root.tools.executeCall(call('c2', 'mcp__web__small', {}), { signal: signal() })
      expect(small).toMatchObject({ isError: false, content: [{ text: 'ok' }] })
    },
  )

  it('bounds an SSE response per event: 3 MB of small events under a 1 MB bound pass', async () => {
    const server = await startHttpServer()
    onTestFinished(async () => {
      await server.close()
    })
    await using dsh = await createDsh({
      servers: { web: { type: 'http', url: server.url } },
      maxMessageBytes: 1_000_000,
    })
    const chatty = await dsh.root.tools.executeCall(call('c1', 'mcp__web__chatty-sse', {}), { signal: signal() })
    expect(chatty).toMatchObject({ isError: false, content: [{ text: 'ok' }] })
  })
})
