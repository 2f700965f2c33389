// One MCP server as one plugin: its connection (stdio child or Streamable HTTP), its tools bridged into
// `ctx.tools` for the plugin's lifetime, list_changed refreshes, and crash restarts with bounded backoff.
// Disposing the plugin closes the client (which ends the child process) and unregisters every tool.
// A server runs outside dsh's sandbox: in a read-only session its tools ask first (`tools/pre-execute`)
// unless the tool says it only reads (`readOnlyHint`) and the user configured the server (issue 34).

import {
  defineTool,
  type ToolCallInput,
  ToolError,
  type ToolLayer,
  type ToolParameters,
  type ToolPreExecuteDecision,
} from '@dsh/agent/tools'
import type {} from '@dsh/attachments'
import type { Context, JsonValue } from '@dsh/kernel'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { McpError, type Tool, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { boundedFetch, OVERFLOW_MARKER } from './bounded-fetch.js'
import type { ResolvedServer } from './config.js'
import { bridgedToolName, convertContent, type McpContentBlock, type McpServerStatus } from './index.js'

export interface ServerPluginConfig {
  server: ResolvedServer
  /** Project directory: the default cwd of stdio servers. */
  cwd: string
  startupTimeoutMs: number
  callTimeoutMs: number
  maxResultChars: number
  /** Bound of one message while it arrives (stdio: the SDK's read buffer; HTTP: a counting `fetch`). */
  maxMessageBytes: number
  restart: { maxRestarts: number; initialDelayMs: number; maxDelayMs: number; resetAfterMs: number }
  /** The manager's live record of this server (mutated here, read by `ctx.mcp.servers()`). */
  status: McpServerStatus
  /** Called once when the first connection attempt settled. */
  settled: () => void
  /** The tool layer the server's tools register in (default: global). */
  layer?: ToolLayer
}

const CLIENT_INFO = { name: 'dsh', version: '0.1.0' }

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The model-facing schema of an MCP tool: its input schema without `$schema` (Ajv compiles draft-07). */
function parametersOf(tool: Tool): ToolParameters {
  const { $schema: _ignored, ...schema } = (tool.inputSchema ?? {}) as Record<string, unknown>
  return { ...schema, type: 'object' }
}

/** A running server connection. TS-private fields (instances are reached through plugin closures only). */
class Connection {
  private client: Client | undefined
  private stopped = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private connectedAt = 0
  private refreshing: Promise<void> | undefined
  private refreshAgain = false
  private readonly registered = new Map<string, { fingerprint: string; dispose: () => void; readOnly: boolean }>()
  private firstSettled = false
  /** Calls in flight, failed at once when a message overflows (the SDK then closes the connection). */
  private readonly inFlight = new Set<(error: ToolError) => void>()

  constructor(
    private readonly ctx: Context,
    private readonly options: ServerPluginConfig,
  ) {}

  private get status(): McpServerStatus {
    return this.options.status
  }

  private report(patch: Partial<McpServerStatus>): void {
    Object.assign(this.status, patch)
    if (patch.error === undefined && 'error' in patch) delete this.status.error
    if (patch.pid === undefined && 'pid' in patch) delete this.status.pid
    this.status.tools = [...this.registered.keys()].sort()
    this.ctx.emit('mcp/status', structuredClone(this.status))
  }

  private settle(): void {
    if (this.firstSettled) return
    this.firstSettled = true
    this.options.settled()
  }

  start(): void {
    void this.connect()
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    const client = this.client
    this.client = undefined
    this.unregisterAll()
    this.report({ state: 'stopped', pid: undefined })
    this.settle()
    await client?.close().catch(() => {})
  }

  private createTransport(): Transport {
    const config = this.options.server.config
    if (config.type === 'http') {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: { ...(config.headers ?? {}) } },
        // Each response body is counted as it arrives and cut past the bound, not read whole.
        fetch: boundedFetch(this.options.maxMessageBytes),
      })
    }
    return new StdioClientTransport({
      command: config.command,
      args: config.args ?? [],
      env: { ...getDefaultEnvironment(), ...(config.env ?? {}) },
      cwd: config.cwd ?? this.options.cwd,
      stderr: 'pipe',
      // Checked as bytes arrive, before a line is parsed: a huge result is refused, not buffered whole.
      maxBufferSize: this.options.maxMessageBytes,
    })
  }

  private async connect(): Promise<void> {
    if (this.stopped) return
    this.report({ state: 'connecting' })
    const transport = this.createTransport()
    const client = new Client(CLIENT_INFO, { capabilities: {} })
    this.client = client
    const stderr = transport instanceof StdioClientTransport ? transport.stderr : null
    let lastStderr = ''
    stderr?.on('data', (chunk: Buffer) => {
      lastStderr = `${lastStderr}${chunk.toString('utf8')}`.slice(-2000)
    })
    client.onclose = () => {
      if (this.client !== client || this.stopped) return
      const tail = lastStderr.trim().split('\n').slice(-3).join(' | ')
      this.crashed(`connection closed${tail ? ` (stderr: ${tail})` : ''}`)
    }
    client.onerror = (error) => {
      // A message over maxMessageBytes was refused while it arrived: stdio's read buffer (the SDK then
      // closes the connection) or the HTTP body counter (the response is cut; the connection is
      // restarted here, as stdio's is, so no call waits on a session in an unknown state).
      const stdio = /ReadBuffer exceeded/.test(error.message)
      if (this.client !== client || !(stdio || error.message.includes(OVERFLOW_MARKER))) return
      const refusal = new ToolError(
        `MCP server "${this.options.server.name}" sent a message larger than ${this.options.maxMessageBytes} bytes (maxMessageBytes); it was refused unread and the server is restarted. Ask for less (a narrower query, a page), or raise maxMessageBytes in the mcp row`,
        'MCP_RESULT_TOO_LARGE',
      )
      for (const fail of this.inFlight) fail(refusal)
      if (!stdio) this.crashed(`a message over maxMessageBytes (${this.options.maxMessageBytes}) was refused`)
    }
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.client !== client) return
      this.refresh().catch((error) => {
        // A failed re-list keeps the current tools; a dead connection is handled by onclose.
        this.ctx.logger('mcp').warn('server %s: tools/list failed: %s', this.options.server.name, messageOf(error))
      })
    })
    try {
      await client.connect(transport, { timeout: this.options.startupTimeoutMs })
      if (this.client !== client || this.stopped) return
      this.connectedAt = Date.now()
      await this.refresh()
      if (this.client !== client || this.stopped) return
      const pid = transport instanceof StdioClientTransport ? (transport.pid ?? undefined) : undefined
      this.report({ state: 'ready', error: undefined, pid })
      this.settle()
    } catch (error) {
      if (this.client !== client || this.stopped) return
      this.crashed(`connect failed: ${messageOf(error)}`)
      await client.close().catch(() => {})
    }
  }

  /** The connection ended unexpectedly: report, then restart after a backoff or give up. */
  private crashed(reason: string): void {
    const client = this.client
    this.client = undefined
    void client?.close().catch(() => {})
    const { maxRestarts, initialDelayMs, maxDelayMs, resetAfterMs } = this.options.restart
    if (this.connectedAt > 0 && Date.now() - this.connectedAt >= resetAfterMs) this.status.restarts = 0
    this.connectedAt = 0
    this.ctx.logger('mcp').warn('server %s: %s', this.options.server.name, reason)
    if (this.status.restarts >= maxRestarts) {
      this.unregisterAll()
      this.report({ state: 'failed', error: `${reason}; gave up after ${maxRestarts} restarts`, pid: undefined })
      this.settle()
      return
    }
    const delay = Math.min(initialDelayMs * 2 ** this.status.restarts, maxDelayMs)
    this.report({ state: 'restarting', error: reason, pid: undefined, restarts: this.status.restarts + 1 })
    this.settle()
    this.timer = setTimeout(() => {
      this.timer = undefined
      void this.connect()
    }, delay)
  }

  /** Re-lists the tools (coalescing concurrent requests) and applies the difference to the registry. */
  private refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true
      return this.refreshing
    }
    this.refreshing = (async () => {
      try {
        do {
          this.refreshAgain = false
          await this.refreshOnce()
        } while (this.refreshAgain && !this.stopped)
      } finally {
        this.refreshing = undefined
      }
    })()
    return this.refreshing
  }

  private async refreshOnce(): Promise<void> {
    const client = this.client
    if (!client) return
    const tools: Tool[] = []
    let cursor: string | undefined
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.options.startupTimeoutMs })
      tools.push(...page.tools)
      cursor = page.nextCursor
    } while (cursor)
    if (client !== this.client || this.stopped) return
    const wanted = new Map<string, Tool>()
    for (const tool of tools) {
      const name = bridgedToolName(this.options.server.name, tool.name)
      if (wanted.has(name)) {
        this.ctx
          .logger('mcp')
          .warn('server %s: tools share the bridged name %s; keeping the first', this.options.server.name, name)
        continue
      }
      wanted.set(name, tool)
    }
    for (const [name, entry] of this.registered) {
      const tool = wanted.get(name)
      if (!tool || JSON.stringify(tool) !== entry.fingerprint) {
        entry.dispose()
        this.registered.delete(name)
      }
    }
    for (const [name, tool] of wanted) {
      if (this.registered.has(name)) continue
      const dispose = this.register(name, tool)
      const readOnly = tool.annotations?.readOnlyHint === true
      if (dispose) this.registered.set(name, { fingerprint: JSON.stringify(tool), dispose, readOnly })
    }
    this.report({})
  }

  private register(name: string, tool: Tool): (() => void) | undefined {
    const server = this.options.server.name
    const spec = {
      name,
      description: `${tool.description ?? tool.title ?? tool.name}\n(MCP tool "${tool.name}" of server "${server}")`,
      mode: tool.annotations?.readOnlyHint === true ? ('parallel-safe' as const) : ('exclusive' as const),
      // Only for durability (no sync before its body); what the tool may do is decided elsewhere.
      readOnly: tool.annotations?.readOnlyHint === true,
      // Sent only once loaded through tool_search when tool search is on (the `tools.search` setting).
      deferred: true,
      presentation: () => ({
        kind: 'generic' as const,
        title: `${server}: ${tool.title ?? tool.annotations?.title ?? tool.name}`,
      }),
      execute: (args: Record<string, unknown>, call: { signal: AbortSignal }) =>
        this.call(tool.name, args, call.signal),
    }
    try {
      return this.ctx.tools.register(defineTool({ ...spec, parameters: parametersOf(tool) }), this.options.layer)
    } catch (error) {
      // A schema Ajv cannot compile: register with an open schema (the server still validates).
      this.ctx
        .logger('mcp')
        .warn('server %s: tool %s: %s; registering without argument validation', server, tool.name, messageOf(error))
      try {
        return this.ctx.tools.register(defineTool({ ...spec, parameters: { type: 'object' } }), this.options.layer)
      } catch (again) {
        this.ctx.logger('mcp').warn('server %s: tool %s not bridged: %s', server, tool.name, messageOf(again))
        return undefined
      }
    }
  }

  private async call(tool: string, args: Record<string, unknown>, signal: AbortSignal) {
    const client = this.client
    const server = this.options.server.name
    if (!client || this.status.state !== 'ready') {
      const why = this.status.error ? ` (${this.status.error})` : ''
      throw new ToolError(
        `MCP server "${server}" is ${this.status.state}${why}; try again later`,
        'MCP_SERVER_UNAVAILABLE',
      )
    }
    let result: Awaited<ReturnType<Client['callTool']>>
    let fail: ((error: ToolError) => void) | undefined
    const overflow = new Promise<never>((_, reject) => {
      fail = reject
    })
    this.inFlight.add(fail as (error: ToolError) => void)
    try {
      result = await Promise.race([
        client.callTool({ name: tool, arguments: { ...args } }, undefined, {
          signal,
          timeout: this.options.callTimeoutMs,
          resetTimeoutOnProgress: true,
        }),
        overflow,
      ])
    } catch (error) {
      if (error instanceof ToolError) throw error
      if (signal.aborted) throw error
      if (error instanceof McpError && error.code === -32000) {
        throw new ToolError(`MCP server "${server}" closed the connection during the call`, 'MCP_SERVER_UNAVAILABLE')
      }
      throw new ToolError(`MCP server "${server}" failed the call: ${messageOf(error)}`, 'MCP_CALL_FAILED')
    } finally {
      this.inFlight.delete(fail as (error: ToolError) => void)
      overflow.catch(() => {})
    }
    const blocks = (Array.isArray(result.content) ? result.content : []) as McpContentBlock[]
    const legacy = 'toolResult' in result ? result.toolResult : undefined
    const store = this.ctx.get('attachments')
    const { content, attachments } = await convertContent(
      blocks,
      result.structuredContent ?? legacy,
      this.options.maxResultChars,
      store && (async (bytes, mimeType) => store.put(bytes, { mimeType, name: `${server}/${tool} result` })),
    )
    const details: Record<string, JsonValue> = { server, tool }
    if (attachments.length > 0) details.attachments = attachments as unknown as JsonValue
    return { content, isError: result.isError === true, details }
  }

  /**
   * The read-only rule for one of this server's tools: in a session whose permission mode is
   * read-only, a call asks unless the tool is declared read-only by a server the user trusts. The
   * server is a process (or a remote service) outside the sandbox, so the mode cannot confine it.
   */
  gate(call: ToolCallInput, decision: ToolPreExecuteDecision): ToolPreExecuteDecision {
    const entry = this.registered.get(call.toolName)
    if (!entry || decision.action !== 'allow') return decision
    // Structural: the sandbox policy is optional here (a profile without one has no permission modes).
    const policy = (this.ctx.get as (name: string) => unknown)('sandboxPolicy') as
      | { mode(sessionId?: string): string }
      | undefined
    if (policy?.mode(call.sessionId) !== 'read-only') return decision
    if (entry.readOnly && this.options.server.trusted) return decision
    const why = entry.readOnly
      ? `it says it only reads, but server "${this.options.server.name}" comes from ${this.options.server.source}, not from your configuration`
      : 'it is not declared read-only (annotations.readOnlyHint)'
    return {
      action: 'ask',
      reason: `this session is read-only and MCP servers run outside its sandbox; ${why}`,
      ...(decision.args === undefined ? {} : { args: decision.args }),
    }
  }

  private unregisterAll(): void {
    for (const entry of this.registered.values()) entry.dispose()
    this.registered.clear()
  }
}

/**
 * The per-server plugin (applied by the manager, one fiber per server). Connects in the background:
 * activation never waits for the server; `config.settled` fires after the first attempt.
 */
export const McpServerPlugin = {
  name: 'mcp-server',
  inject: ['tools'],
  apply(ctx: Context, config: ServerPluginConfig) {
    const connection = new Connection(ctx, config)
    ctx.on('tools/pre-execute', async (call, next) => connection.gate(call, await next()))
    ctx.effect(() => {
      connection.start()
      return () => connection.stop()
    }, `mcp.server(${config.server.name})`)
  },
}
