// What the ACP subagent tests share: a DSH_HOME with a project, the mock model answering the parent and
// the child (told apart by the subagent persona the child's first prompt opens with), patch files, the
// built CLI, and the durable logs read back from disk.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type MockLlmServer, type MockResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'

export const cliPath = fileURLToPath(new URL('../../../../apps/cli/bin/dsh.js', import.meta.url))
const toolsFixture = fileURLToPath(new URL('../../../surfaces/test/rpc/fixtures/test-tools.mjs', import.meta.url))

export type Logged = { type: string; data: Record<string, unknown> }
type Message = { role: string; content: unknown }

export const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : JSON.stringify(content ?? '')
export const messagesOf = (request: RecordedRequest) => request.body.messages as Message[]
/** A request of the ACP child: its first prompt opens with the subagent persona. */
export const isChild = (request: RecordedRequest) =>
  messagesOf(request).some(
    (message) => message.role === 'user' && textOf(message.content).includes('You are a subagent'),
  )
export const toolResults = (request: RecordedRequest) =>
  messagesOf(request).filter((message) => message.role === 'tool').length

export interface World {
  home: string
  project: string
  server: MockLlmServer
  /** A patch for the child `dsh acp`: the test tools, with `ask` on these tools. */
  childPatch: string
  /** A patch for the parent: the `dsh` agent started with the child patch. */
  parentPatch: string
  env(): NodeJS.ProcessEnv
  sessions(): string[]
  log(sessionId: string): Logged[]
  close(): Promise<void>
}

export async function createWorld(
  respond: (request: RecordedRequest) => MockResponse | undefined,
  options: { ask?: string[] } = {},
): Promise<World> {
  const home = mkdtempSync(join(tmpdir(), 'dsh-acp-sub-'))
  const project = join(home, 'project')
  mkdirSync(project)
  const server = await startMockLlmServer({ respond })
  const childPatch = join(home, 'child.yml')
  writeFileSync(
    childPatch,
    `- id: test-tools\n  use: ${JSON.stringify(toolsFixture)}\n  config: { ask: ${JSON.stringify(options.ask ?? [])} }\n`,
  )
  const parentPatch = join(home, 'parent.yml')
  writeFileSync(
    parentPatch,
    [
      '- id: subagents-acp',
      '  use: "@dsh/orchestration/subagents-acp"',
      '  config:',
      '    graceMs: 5000',
      '    agents:',
      '      dsh:',
      '        description: another dsh',
      `        args: ["--patch", ${JSON.stringify(childPatch)}, "acp"]`,
      '        inheritEnv: true',
      '',
    ].join('\n'),
  )
  const logOf = (sessionId: string): Logged[] =>
    readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => JSON.parse(line))
  return {
    home,
    project,
    server,
    childPatch,
    parentPatch,
    env: () => ({
      PATH: process.env.PATH,
      HOME: home,
      DSH_HOME: home,
      DEEPSEEK_API_KEY: 'sk-test',
      DEEPSEEK_BASE_URL: server.url,
    }),
    sessions: () =>
      readdirSync(join(home, 'sessions'))
        .filter((name) => name.endsWith('.jsonl'))
        .map((name) => name.slice(0, -'.jsonl'.length)),
    log: logOf,
    async close() {
      await server.close()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

export const of = (log: Logged[], type: string) => log.filter((event) => event.type === type).map((event) => event.data)

/** Pids of live processes whose command line mentions `needle` (the child's patch path names a child). */
export function processesMentioning(needle: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) pids.push(Number(entry))
    } catch {
      // Gone meanwhile.
    }
  }
  return pids
}
