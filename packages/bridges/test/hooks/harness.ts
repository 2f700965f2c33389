// An in-process dsh for hook tests: real plugins, the scripted model, the hooks bridge over hook
// scripts written to a temp dir, and a `bash`-named test tool that records what it received.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import { startInProcess } from '@dsh/test-support/in-process'
import HooksBridge, { type HooksConfig } from '../../src/hooks/index.js'

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
  const { root } = await startInProcess({ cwd: hooks.cwd ?? tmpdir(), script, invariants: false })
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

export { calls, dataOf, text, types } from '@dsh/test-support/in-process'
