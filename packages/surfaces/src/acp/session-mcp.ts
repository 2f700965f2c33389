// The MCP servers an editor hands to `session/new` / `session/load`: connected through `ctx.mcp` for
// that session's agent only (its tool layer), and stopped with it. ACP requires stdio; http is taken
// because it is advertised; sse is not (the MCP client does not speak the legacy transport).
import type * as acp from '@agentclientprotocol/sdk'
import type { Agent } from '@dsh/agent'
import type {} from '@dsh/bridges/mcp'
import { HarnessError } from '@dsh/kernel'

/** What `initialize` advertises in `mcpCapabilities`. */
export const MCP_CAPABILITIES = { http: true, sse: false } as const

const pairs = (list: ReadonlyArray<{ name: string; value: string }>) =>
  Object.fromEntries(list.map(({ name, value }) => [name, value]))

/** A server name the MCP client accepts (editors allow any string; tool names derive from it). */
const safeName = (name: string) => name.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64) || 'server'

function invalid(message: string): HarnessError {
  return new HarnessError('ACP_MCP_SERVERS_INVALID', message, {})
}

/**
 * The editor's servers in the MCP client's config shape, by (made safe) name. Throws
 * `ACP_MCP_SERVERS_INVALID` for an sse server, a repeated name, or servers when there is no MCP
 * client (`hasClient`: the `mcp` row is active), each with what to send instead.
 */
export function mcpConfigOf(servers: readonly acp.McpServer[], hasClient: boolean): Record<string, unknown> {
  if (servers.length > 0 && !hasClient) {
    throw invalid('this dsh has no MCP client (the "mcp" row is not active); send mcpServers: []')
  }
  const configs: Record<string, unknown> = {}
  for (const server of servers) {
    const name = safeName(server.name)
    if (Object.hasOwn(configs, name)) {
      throw invalid(`mcpServers has two servers named "${server.name}" (as "${name}"); give each a distinct name`)
    }
    if ('type' in server && server.type === 'sse') {
      throw invalid(
        `MCP server "${server.name}": sse is not supported (mcpCapabilities.sse is false); use http or stdio`,
      )
    }
    configs[name] =
      'type' in server && server.type === 'http'
        ? { type: 'http', url: server.url, headers: pairs(server.headers) }
        : { command: server.command, args: server.args, env: pairs(server.env) }
  }
  return configs
}

/**
 * Connects `configs` (from `mcpConfigOf`) for `agent` and waits for each server's first connection
 * attempt, so the session's first request offers their tools. A server that fails to connect is
 * logged, not fatal (the MCP client keeps retrying it). The servers live in the agent's scope, so they
 * stop when the agent is disposed; the returned disposer stops them sooner (the shape of a session
 * host's `setup`). Throws `MCP_CONFIG_INVALID` for a bad entry (e.g. an empty command).
 */
export async function attachSessionMcp(
  agent: Agent,
  configs: Record<string, unknown>,
  log: (line: string) => void,
): Promise<(() => Promise<void>) | undefined> {
  const mcp = agent.ctx.get('mcp')
  if (!mcp || Object.keys(configs).length === 0) return undefined
  const attached = await mcp.attach(configs, {
    cwd: agent.session.header.cwd,
    layer: { agentId: agent.id },
    source: `acp session ${agent.session.id}`,
  })
  await attached.whenSettled()
  for (const status of attached.servers()) {
    if (status.state !== 'ready') log(`MCP server ${status.name} is ${status.state}: ${status.error ?? 'no detail'}`)
  }
  return () => attached.dispose()
}
