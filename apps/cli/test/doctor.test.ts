// `dsh doctor` on this machine and with bubblewrap off the PATH: each check's status, why, and the fix.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMockLlmServer } from '@dsh/test-support'
import { describe, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { runDsh } from './dsh-child.js'

describe('dsh doctor', () => {
  it('reports sandbox, containment, key and endpoint; without bwrap it says why and how to fix it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-doctor-'))
    await using server = await startMockLlmServer()
    // A PATH with bash and setpriv but no bwrap.
    const path = join(home, 'bin')
    mkdirSync(path)
    for (const tool of ['bash', 'setpriv', 'true'])
      symlinkSync(spawnSync('which', [tool]).stdout.toString().trim(), join(path, tool))
    try {
      // Asynchronous: the mock endpoint lives in this process and must keep answering.
      const run = async (env: Record<string, string | undefined>) => {
        const { code, stdout } = await runDsh(['doctor'], { home, env })
        return { status: code, stdout }
      }
      const missing = await run({ PATH: path, DEEPSEEK_BASE_URL: server.url })
      expect(missing.status).toBe(ExitCode.CONFIG)
      expect(missing.stdout).toMatch(/^ok {4}node +Node \d+/m)
      expect(missing.stdout).toMatch(
        /^FAIL {2}sandbox +bubblewrap \(bwrap\) is not usable: not installed\n +fix: install bubblewrap/m,
      )
      expect(missing.stdout).toMatch(/^FAIL {2}containment +pdeathsig/m)
      expect(missing.stdout).toMatch(/^FAIL {2}key +DEEPSEEK_API_KEY is not set\n +fix: set DEEPSEEK_API_KEY/m)
      expect(missing.stdout).toMatch(new RegExp(`^ok {4}endpoint +${server.url} answers`, 'm'))

      const healthy = await run({ PATH: process.env.PATH, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url })
      expect(healthy.stdout).toMatch(/^ok {4}sandbox +bwrap/m)
      expect(healthy.stdout).toMatch(/^ok {4}containment +pid-namespace/m)
      expect(healthy.stdout).toMatch(/^ok {4}key +DEEPSEEK_API_KEY from env/m)
      expect(healthy.status).toBe(ExitCode.OK)
      expect(healthy.stdout).toMatch(/^ok {4}trust +.*nothing here needs trust/m)
      // The SQLite engine follows the Node that runs dsh: its own node:sqlite from 22.13.
      const [major = 0, minor = 0] = (/^ok {4}node +Node (\d+)\.(\d+)/m.exec(healthy.stdout) ?? []).slice(1).map(Number)
      const engine = major > 22 || (major === 22 && minor >= 13) ? 'node:sqlite' : 'better-sqlite3'
      expect(healthy.stdout).toMatch(new RegExp(`^ok {4}sqlite +${engine} \\(`, 'm'))

      // A folder configuration waiting for trust is reported, not failed.
      writeFileSync(join(home, '.mcp.json'), '{"mcpServers":{}}')
      const waiting = await run({ PATH: process.env.PATH, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url })
      expect(waiting.status).toBe(ExitCode.OK)
      expect(waiting.stdout).toMatch(
        /^ok {4}trust +.*not loaded until trusted: \.mcp\.json\n +fix: review them, then run `dsh trust`/m,
      )
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })

  it("checks the default model's provider and every configured endpoint, not DeepSeek", async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-doctor-'))
    await using server = await startMockLlmServer()
    try {
      // Only an Anthropic key, its endpoint pointed at the mock: no DeepSeek check, exit 0.
      const anthropic = await runDsh(['doctor'], {
        home,
        env: { ANTHROPIC_API_KEY: 'sk-ant', ANTHROPIC_BASE_URL: server.url, DSH_MODEL: 'anthropic:claude-sonnet-4-5' },
      })
      expect(anthropic.stdout).not.toMatch(/DEEPSEEK/)
      expect(anthropic.stdout).toMatch(/^ok {4}model +default model anthropic:claude-sonnet-4-5/m)
      expect(anthropic.stdout).toMatch(/^ok {4}key +ANTHROPIC_API_KEY from env/m)
      expect(anthropic.stdout).toMatch(new RegExp(`^ok {4}endpoint +${server.url} answers`, 'm'))
      expect(anthropic.stdout).not.toMatch(/^FAIL {2}(model|key|endpoint)/m)

      // The same without the key: the Anthropic key is what is missing.
      const keyless = await runDsh(['doctor'], {
        home,
        env: { ANTHROPIC_BASE_URL: server.url, DSH_MODEL: 'anthropic:claude-sonnet-4-5' },
      })
      expect(keyless.code).toBe(ExitCode.CONFIG)
      expect(keyless.stdout).toMatch(/^FAIL {2}key +ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY is not set\n +fix: set/m)

      // A local endpoint as the default model, and a second endpoint that is down: each one checked.
      expect((await runDsh(['config', 'set', 'endpoints.local.baseUrl', server.url], { home })).code).toBe(0)
      expect((await runDsh(['config', 'set', 'endpoints.down.baseUrl', 'http://127.0.0.1:9/v1'], { home })).code).toBe(
        0,
      )
      const local = await runDsh(['doctor'], { home, env: { DSH_MODEL: 'openai-compatible:local/qwen3' } })
      expect(local.stdout).not.toMatch(/DEEPSEEK/)
      expect(local.stdout).toMatch(/^ok {4}model +default model openai-compatible:local\/qwen3/m)
      expect(local.stdout).toMatch(/^ok {4}key +openai-compatible needs no key/m)
      expect(local.stdout).toMatch(new RegExp(`^ok {4}endpoint +${server.url} answers`, 'm'))
      expect(local.stdout).toMatch(
        /^FAIL {2}endpoint down +http:\/\/127\.0\.0\.1:9\/v1 cannot be reached: .*\n +fix: check endpoints\.down\.baseUrl/m,
      )
      expect(local.code).toBe(ExitCode.CONFIG)
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
