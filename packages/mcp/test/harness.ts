// An in-process dsh for MCP tests: the real plugins under one Context, the scripted model, the MCP
// manager with real npm servers started as `node <bin>` (never downloaded at test time).
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { AgentsService } from '@dsh/agent'
import AgentLoopService from '@dsh/agent-loop'
import ApprovalService from '@dsh/approval'
import { Context } from '@dsh/kernel'
import { type AssistantMessage, LlmService, type ToolCallBlock } from '@dsh/llm'
import { createScriptedAdapter, type ScriptedResponse } from '@dsh/llm/scripted'
import { eventData, type Session, type SessionEventMap, type SessionEventType, SessionService } from '@dsh/session'
import { SystemPromptService } from '@dsh/system-prompt'
import { ToolsService } from '@dsh/tools'
import type { McpConfig } from '../src/index.js'
import McpService from '../src/manager.js'

const require = createRequire(import.meta.url)

/** The `bin` script of an installed server package. */
export function serverBin(pkg: string): string {
  const manifest = require.resolve(`${pkg}/package.json`)
  const bin = (require(manifest) as { bin: Record<string, string> }).bin
  return join(dirname(manifest), Object.values(bin)[0] as string)
}

export const everything = () => ({
  command: process.execPath,
  args: [serverBin('@modelcontextprotocol/server-everything'), 'stdio'],
})
export const filesystem = (...dirs: string[]) => ({
  command: process.execPath,
  args: [serverBin('@modelcontextprotocol/server-filesystem'), ...dirs],
})

export async function createDsh(mcp: McpConfig, script: ScriptedResponse[] = []) {
  const root = new Context()
  root.plugin(SessionService, { cwd: tmpdir() })
  root.plugin(LlmService, { provider: 'scripted' })
  root.plugin(ToolsService)
  root.plugin(ApprovalService)
  root.plugin(SystemPromptService)
  root.plugin(AgentsService)
  await root.plugin(AgentLoopService, { model: { provider: 'scripted', model: 'scripted' } })
  root.llm.registerAdapter('scripted', createScriptedAdapter(script))
  const fiber = root.plugin(McpService, { mcpJson: false, ...mcp })
  await fiber
  await root.mcp.whenSettled()
  return {
    root,
    fiber,
    async [Symbol.asyncDispose]() {
      await fiber.dispose()
    },
  }
}

export function tempDir() {
  const path = mkdtempSync(join(tmpdir(), 'dsh-mcp-'))
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) }
}

export const calls = (
  ...blocks: Array<[id: string, name: string, args: Record<string, unknown>]>
): AssistantMessage => ({
  role: 'assistant',
  content: blocks.map(([id, name, args]): ToolCallBlock => ({ type: 'tool-call', id, name, arguments: args })),
  finishReason: 'tool-calls',
})

export const text = (value: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text: value }],
  finishReason: 'stop',
})

/** The payloads of every `type` event of the session, typed by the declared map. */
export function dataOf<T extends SessionEventType>(session: Session, type: T): SessionEventMap[T][] {
  return eventData(session.events, type)
}

/** Polls until `check` returns a value (or throws after `ms`). */
export async function until<T>(check: () => T | undefined | false, ms = 30_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = check()
    if (value) return value
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export const signal = () => new AbortController().signal
