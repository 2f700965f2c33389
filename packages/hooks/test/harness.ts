// An in-process dsh for hook tests: real plugins, the scripted model, the hooks bridge over hook
// scripts written to a temp dir, and a `bash`-named test tool that records what it received.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentsService } from '@dsh/agent'
import AgentLoopService from '@dsh/agent-loop'
import ApprovalService from '@dsh/approval'
import { Context } from '@dsh/kernel'
import { type AssistantMessage, LlmService, type ToolCallBlock } from '@dsh/llm'
import { createScriptedAdapter, type ScriptedResponse } from '@dsh/llm/scripted'
import { eventData, type Session, type SessionEventMap, type SessionEventType, SessionService } from '@dsh/session'
import { SystemPromptService } from '@dsh/system-prompt'
import { defineTool, ToolsService } from '@dsh/tools'
import HooksBridge, { type HooksConfig } from '../src/index.js'

export function tempDir() {
  const path = mkdtempSync(join(tmpdir(), 'dsh-hooks-'))
  return {
    path,
    /** Writes an executable script and returns the command that runs it. */
    script(name: string, body: string): string {
      const file = join(path, name)
      writeFileSync(file, body)
      chmodSync(file, 0o755)
      return name.endsWith('.mjs') ? `"${process.execPath}" "${file}"` : `"${file}"`
    },
    [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }),
  }
}

export async function createDsh(hooks: HooksConfig, script: ScriptedResponse[]) {
  const root = new Context()
  root.plugin(SessionService, { cwd: hooks.cwd ?? tmpdir() })
  root.plugin(LlmService, { provider: 'scripted' })
  root.plugin(ToolsService)
  root.plugin(ApprovalService)
  root.plugin(SystemPromptService)
  root.plugin(AgentsService)
  await root.plugin(AgentLoopService, { model: { provider: 'scripted', model: 'scripted' } })
  root.llm.registerAdapter('scripted', createScriptedAdapter(script))
  const received: Record<string, unknown>[] = []
  for (const name of ['bash', 'write']) {
    root.tools.register(
      defineTool<{ command?: string }>({
        name,
        description: `test ${name}`,
        parameters: { type: 'object', properties: { command: { type: 'string' } } },
        execute: (args) => {
          received.push({ tool: name, ...args })
          return `ran ${name}: ${String(args.command)}`
        },
      }),
    )
  }
  const bridge = root.plugin(HooksBridge, { user: false, ...hooks })
  await bridge
  return { root, bridge, received }
}

/** Sends one prompt and waits for the agent to settle. */
export async function turn(root: Context, prompt: string) {
  const agent = await root.agents.create()
  agent.followup(prompt)
  await agent.whenIdle()
  return agent
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

export function types(session: Session): string[] {
  return session.events.map((event) => event.type).filter((type) => type !== 'assistant/chunk')
}
