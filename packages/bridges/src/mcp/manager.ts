// The MCP manager row: `ctx.mcp`. Resolves the servers (row config + the project's `.mcp.json`) at
// activation and applies one McpServerPlugin fiber per server under its own context, so disposing the
// row stops every server, and the servers' tools go with them.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { PreStepDecision, PreStepInput } from '@dsh/agent'
import type {} from '@dsh/composition'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import { projectTrust } from '@dsh/settings/trust'
import { checkServer, type ResolvedServer, resolveServers } from './config.js'
import type { McpAttachedServers, McpAttachOptions, McpConfig, McpManager, McpServerStatus } from './index.js'
import type { ServerPluginConfig } from './server.js'

/** The per-server settings every server shares, from the row config. */
type ServerDefaults = Pick<
  ServerPluginConfig,
  'startupTimeoutMs' | 'callTimeoutMs' | 'maxResultChars' | 'maxMessageBytes' | 'restart'
>

function positive(value: unknown, fallback: number, key: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new HarnessError('MCP_CONFIG_INVALID', `mcp config: ${key} must be a number >= 0`, {
      key,
      value: String(value),
    })
  }
  return value
}

export class McpService extends Service implements McpManager {
  static readonly provide = 'mcp'
  static readonly inject = ['tools']
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly statuses = new Map<string, McpServerStatus>()
  private readonly pending: ServerPluginConfig[] = []
  private readonly settledAll: Promise<void>
  private readonly defaults: ServerDefaults

  constructor(ctx: Context, config: McpConfig = {}) {
    config ??= {}
    const cwd = config.cwd ?? ctx.get('launcher')?.config.cwd ?? process.cwd()
    const restart = {
      maxRestarts: positive(config.restart?.maxRestarts, 5, 'restart.maxRestarts'),
      initialDelayMs: positive(config.restart?.initialDelayMs, 500, 'restart.initialDelayMs'),
      maxDelayMs: positive(config.restart?.maxDelayMs, 30_000, 'restart.maxDelayMs'),
      resetAfterMs: positive(config.restart?.resetAfterMs, 60_000, 'restart.resetAfterMs'),
    }
    const startupTimeoutMs = positive(config.startupTimeoutMs, 30_000, 'startupTimeoutMs')
    const callTimeoutMs = positive(config.callTimeoutMs, 120_000, 'callTimeoutMs')
    const maxResultChars = positive(config.maxResultChars, 100_000, 'maxResultChars')
    const maxMessageBytes = positive(config.maxMessageBytes, 10 * 1024 * 1024, 'maxMessageBytes')
    if (config.mcpJson !== undefined && typeof config.mcpJson !== 'boolean' && typeof config.mcpJson !== 'string') {
      throw new HarnessError('MCP_CONFIG_INVALID', 'mcp config: mcpJson must be a boolean or a path', {})
    }
    // The project's own `.mcp.json` starts commands and expands the environment into URLs it
    // chooses: it loads only in a trusted folder. A file a row names is the user's configuration.
    const projectFile = config.mcpJson === undefined || config.mcpJson === true
    const untrusted = projectFile && existsSync(join(cwd, '.mcp.json')) && !projectTrust(ctx).admits(cwd, '.mcp.json')
    const { servers, problems } = resolveServers(
      config.servers as Record<string, unknown> | undefined,
      untrusted ? false : config.mcpJson,
      cwd,
      process.env,
    )
    super(ctx, 'mcp')
    if (untrusted)
      problems.push(
        `${join(cwd, '.mcp.json')} not loaded: this folder is not trusted (or the file changed since); review it, then run \`dsh trust\``,
      )
    for (const problem of problems) ctx.logger('mcp').warn(problem)
    this.defaults = { startupTimeoutMs, callTimeoutMs, maxResultChars, maxMessageBytes, restart }
    const planned = plan(servers, { ...this.defaults, cwd })
    for (const config of planned.configs) this.statuses.set(config.server.name, config.status)
    this.pending.push(...planned.configs)
    this.settledAll = planned.settled
    if (planned.configs.length > 0) {
      // The first step of a session waits for every server's first attempt (each bounded by
      // startupTimeoutMs): a request sent before would lack their tools, and a headless run has only one.
      let settled = false
      void planned.settled.then(() => {
        settled = true
      })
      ctx.on('agent/pre-step', async (_input: PreStepInput, next: () => Promise<PreStepDecision>) => {
        if (!settled) await planned.settled
        return next()
      })
    }
  }

  /**
   * Starts one server plugin per configured server. The MCP SDK takes about half a second to load, so
   * it is imported only when there is a server to talk to.
   */
  async [Service.init](): Promise<void> {
    if (this.pending.length === 0) return
    const { McpServerPlugin } = await import('./server.js')
    for (const config of this.pending.splice(0)) this.ctx.plugin(McpServerPlugin, config)
  }

  servers(): McpServerStatus[] {
    return [...this.statuses.values()]
      .map((status) => structuredClone(status))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  whenSettled(): Promise<void> {
    return this.settledAll
  }

  async attach(servers: Record<string, unknown>, options: McpAttachOptions): Promise<McpAttachedServers> {
    const resolved: ResolvedServer[] = []
    const problems: string[] = []
    for (const [name, raw] of Object.entries(servers)) {
      const checked = checkServer(name, raw, undefined)
      if (checked.config) {
        resolved.push({ name, source: options.source, config: checked.config, trusted: options.trusted === true })
      }
      problems.push(...checked.problems)
    }
    if (problems.length > 0) {
      throw new HarnessError('MCP_CONFIG_INVALID', `mcp servers: ${problems.join('; ')}`, { problems })
    }
    const planned = plan(resolved, { ...this.defaults, cwd: options.cwd, layer: options.layer })
    const { McpServerPlugin } = await import('./server.js')
    // Applied under the caller's scope (Cordis binds `this.ctx` to it): its disposal stops these servers.
    const fiber = this.ctx.plugin({
      name: `mcp-attached(${options.source})`,
      inject: ['tools'],
      apply(ctx: Context) {
        for (const config of planned.configs) ctx.plugin(McpServerPlugin, config)
      },
    })
    await fiber
    return {
      servers: () => planned.configs.map((config) => structuredClone(config.status)),
      whenSettled: () => planned.settled,
      dispose: async () => {
        await fiber.dispose()
      },
    }
  }
}

/** One plugin config per server, with a live status record each and a promise of their first attempts. */
function plan(
  servers: readonly ResolvedServer[],
  shared: ServerDefaults & Pick<ServerPluginConfig, 'cwd' | 'layer'>,
): { configs: ServerPluginConfig[]; settled: Promise<void> } {
  const settling: Promise<void>[] = []
  const configs = [...servers]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((server): ServerPluginConfig => {
      const status: McpServerStatus = {
        name: server.name,
        source: server.source,
        transport: server.config.type === 'http' ? 'http' : 'stdio',
        state: 'connecting',
        tools: [],
        restarts: 0,
      }
      let settled!: () => void
      settling.push(new Promise<void>((done) => (settled = done)))
      const { layer, ...rest } = shared
      return { ...rest, ...(layer ? { layer } : {}), server, status, settled }
    })
  return { configs, settled: Promise.all(settling).then(() => {}) }
}

export default McpService
