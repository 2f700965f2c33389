// An in-process dsh with workflows: the real runtime rows, subagents (spawn), workflows and their
// tools, a local bash for loop checks, and the deepseek adapter talking to the mock SSE server.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Context } from '@dsh/kernel'
import deepseek from '@dsh/llm/deepseek'
import SubagentsService from '@dsh/orchestration/subagents'
import spawn from '@dsh/orchestration/subagents/spawn'
import PresetsService from '@dsh/presets'
import CredentialsService from '@dsh/settings/credentials'
import type { MockResponse } from '@dsh/test-support'
import { type MockLlmServer, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { startInProcess } from '@dsh/test-support/in-process'
import LocalBash from '@dsh/world/shell/bash-local'
import LocalSubprocess from '@dsh/world/subprocess/local'
import WorkflowsService from '../../src/workflow/index.js'
import tools from '../../src/workflow/tools.js'

export const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : JSON.stringify(content ?? '')
const messagesOf = (request: RecordedRequest) => request.body.messages as Array<{ role: string; content: unknown }>
export const isChild = (request: RecordedRequest) =>
  textOf(messagesOf(request).find((message) => message.role === 'system')?.content).includes('You are a subagent')
/** The last user text of a request (a child's task). */
export const taskOf = (request: RecordedRequest) =>
  textOf(
    messagesOf(request)
      .filter((message) => message.role === 'user')
      .at(-1)?.content,
  )
export const hasToolResult = (request: RecordedRequest) =>
  messagesOf(request).some((message) => message.role === 'tool')

export interface Harness {
  root: Context
  server: MockLlmServer
  close(): Promise<void>
}

export async function createHarness(options: {
  cwd: string
  respond: (request: RecordedRequest) => MockResponse | undefined
  /** Rows of the test, mounted once everything else is active. */
  after?: (root: Context) => unknown
  /** Mount the presets row (the shipped presets only). */
  presets?: boolean
}): Promise<Harness> {
  const server = await startMockLlmServer({ respond: options.respond })
  const { root } = await startInProcess({
    adapter: false,
    provider: 'deepseek',
    model: 'deepseek-chat',
    cwd: options.cwd,
    sessionsDir: join(options.cwd, '.sessions'),
    before: async (root) => {
      root.plugin(CredentialsService, {
        env: { DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
        home: options.cwd,
        cwd: options.cwd,
      })
      root.plugin(deepseek, {})
      if (options.presets) root.plugin(PresetsService, { project: false, user: false })
      root.plugin(LocalSubprocess)
      root.plugin(LocalBash, { graceMs: 100 })
      root.plugin(SubagentsService, {})
      root.plugin(spawn)
      root.plugin(WorkflowsService, {})
      root.plugin(tools)
    },
    after: (root) => options.after?.(root),
  })
  return {
    root,
    server,
    async close() {
      await root.sessions.flush()
      await server.close()
    },
  }
}

/**
 * Removes a test directory. The JSONL store refreshes a released session's metadata sidecar after the
 * flush barrier (nothing here disposes the whole tree), so a late file may appear while removing.
 */
export async function removeDir(dir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      rmSync(dir, { recursive: true, force: true })
      return
    } catch (error) {
      if (attempt >= 20) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}
