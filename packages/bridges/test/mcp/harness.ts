// An in-process dsh for MCP tests: the real plugins under one Context, the scripted model, the MCP
// manager with real npm servers started as `node <bin>` (never downloaded at test time).
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import { startInProcess } from '@dsh/test-support/in-process'
import type { McpConfig } from '../../src/mcp/index.js'
import McpService from '../../src/mcp/manager.js'

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
  const { root } = await startInProcess({ cwd: tmpdir(), script, invariants: false })
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

export { calls, dataOf, text, until } from '@dsh/test-support/in-process'

export const signal = () => new AbortController().signal
