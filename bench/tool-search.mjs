// Tokens sent before the first user word (issue 33): the system prompt and tool schemas of the first
// request of `dsh run` (the `code` preset, every base row) with 3 MCP servers of 20 tools each
// (bench/fixtures/mcp-many-tools.mjs), read from what the local mock model received, with tool search
// on (the default: auto) and off. Tokens are the wire's JSON at 4 characters a token, the meter's
// estimate. Pi's minimal core (its 4 tools and prompt) is about 1.3k tokens, the reference.
// Needs `npm run build`.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'

const here = dirname(fileURLToPath(import.meta.url))
const bin = process.env.DSH_BIN ?? join(here, '..', 'apps', 'cli', 'bin', 'dsh.js')
const fixture = join(here, 'fixtures', 'mcp-many-tools.mjs')
const servers = ['github', 'postgres', 'browser']
const tokens = (value) => Math.round(JSON.stringify(value ?? '').length / 4)

async function firstRequest(search) {
  const home = mkdtempSync(join(tmpdir(), 'dsh-bench-search-'))
  const server = await startMockLlmServer({ respond: () => completionResponse({ text: 'ok' }) })
  try {
    const patch = join(home, 'mcp.yml')
    writeFileSync(
      patch,
      [
        '- id: mcp',
        '  use: "@dsh/bridges/mcp/manager"',
        '  config:',
        '    mcpJson: false',
        '    servers:',
        ...servers.map(
          (name) =>
            `      ${name}: { command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(fixture)}, ${name}, "20"] }`,
        ),
        '',
      ].join('\n'),
    )
    const child = spawn(process.execPath, [bin, '--patch', patch, '--set', `tools.search=${search}`, 'run', 'hi'], {
      cwd: home,
      env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-bench', DEEPSEEK_BASE_URL: server.url },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (data) => {
      stderr += data
    })
    const code = await new Promise((resolve) => child.on('exit', resolve))
    if (code !== 0) throw new Error(`dsh run exited ${code}: ${stderr.slice(-500)}`)
    const body = server.requests[0]?.body
    const tools = body?.tools ?? []
    const system = body?.messages?.find((message) => message.role === 'system')?.content
    return {
      tools: tools.length,
      mcp: tools.filter((tool) => tool.function.name.startsWith('mcp__')).length,
      toolTokens: tokens(tools),
      systemTokens: tokens(system),
    }
  } finally {
    await server.close()
    rmSync(home, { recursive: true, force: true })
  }
}

const on = await firstRequest('auto')
const off = await firstRequest('off')
const line = (name, r) =>
  `${name.padEnd(16)} ${String(r.tools).padStart(3)} tools (${String(r.mcp).padStart(2)} MCP)  tool schemas ${String(r.toolTokens).padStart(6)}  system ${String(r.systemTokens).padStart(5)}  before the first word ${String(r.toolTokens + r.systemTokens).padStart(6)} tokens`
console.log('3 MCP servers x 20 tools, the code preset, first request of dsh run:')
console.log(line('search on (auto)', on))
console.log(line('search off', off))
const before = (r) => r.toolTokens + r.systemTokens
console.log(
  `tool search sends ${(before(on) / before(off)).toFixed(2)}x the tokens (${before(off) - before(on)} fewer); Pi's minimal core is about 1300`,
)
