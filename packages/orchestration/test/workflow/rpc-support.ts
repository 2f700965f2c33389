// What the tests over the built `dsh rpc` share: a runtime per DSH_HOME with the model behind the mock
// server, and the durable session log read back from disk.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DshClient } from '@dsh/sdk'
import { type MockLlmServer, type MockResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'

export const cliPath = fileURLToPath(new URL('../../../../apps/cli/bin/dsh.js', import.meta.url))

export type Logged = { type: string; data: Record<string, unknown> }

export interface RpcWorld {
  home: string
  server: MockLlmServer
  env(): NodeJS.ProcessEnv
  client(): DshClient
  /** The session's durable events (empty while the file does not exist yet). */
  log(sessionId: string): Logged[]
  close(): Promise<void>
}

export async function rpcWorld(respond: (request: RecordedRequest) => MockResponse | undefined): Promise<RpcWorld> {
  const home = mkdtempSync(join(tmpdir(), 'dsh-workflow-rpc-'))
  const server = await startMockLlmServer({ respond })
  const env = () => ({
    PATH: process.env.PATH,
    DSH_HOME: home,
    DEEPSEEK_API_KEY: 'sk-test',
    DEEPSEEK_BASE_URL: server.url,
  })
  return {
    home,
    server,
    env,
    client: () => new DshClient({ cliPath, cwd: home, env: env(), closeStepMs: 5000 }),
    log(sessionId) {
      try {
        return readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
          .trim()
          .split('\n')
          .slice(1)
          .map((line) => JSON.parse(line))
      } catch {
        return []
      }
    },
    async close() {
      await server.close()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

export const of = (log: Logged[], type: string) => log.filter((event) => event.type === type).map((event) => event.data)
