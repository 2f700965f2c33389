// @dsh/bridges/mcp: the MCP client seam. Server configuration (row config and the project's `.mcp.json`), the
// `ctx.mcp` status service type, the bridged tool names and the conversion of MCP tool results into
// the native vocabulary. The manager row (manager.ts) runs one client plugin per server.
import { createHash } from 'node:crypto'
import type { ToolLayer } from '@dsh/agent/tools'
import type { ToolResultContent } from '@dsh/llm'

export type { ResolvedServer } from './config.js'
export { expandVars, loadMcpJson, resolveServers } from './config.js'

/** A stdio server: a child process speaking JSON-RPC on stdin/stdout. */
export interface McpStdioServer {
  type?: 'stdio'
  command: string
  args?: string[]
  /** Added to the SDK's minimal default environment (the parent's environment is not inherited). */
  env?: Record<string, string>
  cwd?: string
}

/** A Streamable HTTP server. */
export interface McpHttpServer {
  type: 'http'
  url: string
  headers?: Record<string, string>
}

export type McpServerConfig = McpStdioServer | McpHttpServer

export interface McpRestartConfig {
  /** Consecutive restarts before the server is given up as `failed`. Default 5. */
  maxRestarts?: number
  /** First backoff delay; doubles per consecutive restart. Default 500 ms. */
  initialDelayMs?: number
  /** Backoff ceiling. Default 30 s. */
  maxDelayMs?: number
  /** A connection up this long resets the consecutive-restart count. Default 60 s. */
  resetAfterMs?: number
}

export interface McpConfig {
  /** Servers by name (these win over `.mcp.json` entries of the same name). */
  servers?: Record<string, McpServerConfig>
  /**
   * Read the project's `.mcp.json` (`{ "mcpServers": { name: config } }`): `true` (default) reads
   * `<cwd>/.mcp.json`, a string names the file, `false` skips it. Project servers run commands from
   * the repository: disable this for untrusted checkouts.
   */
  mcpJson?: boolean | string
  /** Project directory (default: the launcher's cwd, then the process cwd). */
  cwd?: string
  /** Connect + initialize bound per attempt. Default 30 s. */
  startupTimeoutMs?: number
  /** Per-call bound (reset by progress notifications). Default 120 s. */
  callTimeoutMs?: number
  /** Bound of the text a tool result carries to the model. Default 100,000 characters. */
  maxResultChars?: number
  /**
   * Bound of one message from a server, enforced while it arrives (before it is parsed; over HTTP, a
   * JSON response body or one SSE event): a larger result fails its call with MCP_RESULT_TOO_LARGE and
   * the server is restarted. Default 10 MiB.
   */
  maxMessageBytes?: number
  restart?: McpRestartConfig
}

/** `connecting` (first or re-connect), `ready`, `restarting` (waiting out a backoff), `failed` (given up), `stopped`. */
export type McpServerState = 'connecting' | 'ready' | 'restarting' | 'failed' | 'stopped'

/** A live view of one server, as `ctx.mcp.servers()` reports it. */
export interface McpServerStatus {
  name: string
  /** Where the configuration came from: `config` (the row) or the `.mcp.json` path. */
  source: string
  transport: 'stdio' | 'http'
  state: McpServerState
  /** Bridged tool names currently registered. */
  tools: string[]
  /** Restarts since the last stable connection. */
  restarts: number
  /** The stdio child's pid while connected. */
  pid?: number
  /** The last connection or server error. */
  error?: string
}

declare module 'cordis' {
  interface Context {
    mcp: McpManager
  }
  interface Events {
    /** A server changed state (connected, crashed, restarting, failed, stopped). */
    'mcp/status'(status: Readonly<McpServerStatus>): void
  }
}

/** `ctx.mcp`: the MCP servers of this process (see manager.ts). */
export interface McpManager {
  /** Snapshots of every configured server, sorted by name. */
  servers(): McpServerStatus[]
  /**
   * Resolves when every server has settled its first connection attempt (ready or not). Never rejects.
   */
  whenSettled(): Promise<void>
  /**
   * Connects servers for one scope (a surface's session, an agent) rather than for the process: their
   * tools register in `options.layer` (e.g. `{ agentId }`, so only that agent sees them) and everything
   * stops, children ending and tools unregistering, when the calling plugin is disposed or
   * `dispose()` is called. `servers` are checked like row servers, without `${VAR}` expansion (the
   * caller gives literal values); any problem throws `MCP_CONFIG_INVALID` before anything starts.
   */
  attach(servers: Record<string, unknown>, options: McpAttachOptions): Promise<McpAttachedServers>
}

export interface McpAttachOptions {
  /** Default cwd of stdio servers (the session's workspace). */
  cwd: string
  /** Where the servers' tools register (default: global). */
  layer?: ToolLayer
  /** Shown as each server's `source` in its status, e.g. `acp session <id>`. */
  source: string
  /** Believe these servers' `readOnlyHint` in read-only sessions (default false: every call asks there). */
  trusted?: boolean
}

/** Servers attached to one scope (see `McpManager.attach`). */
export interface McpAttachedServers {
  /** Snapshots of these servers, sorted by name. */
  servers(): McpServerStatus[]
  /** Resolves when each server settled its first connection attempt (ready or not). Never rejects. */
  whenSettled(): Promise<void>
  /** Stops the servers (idempotent). */
  dispose(): Promise<void>
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * The bridged name of an MCP tool: `mcp__<server>__<tool>`. Characters outside `[A-Za-z0-9_-]` become
 * `_`; when anything was replaced or the name is over 64 characters, it is cut and suffixed with 8 hex
 * digits of a SHA-256 of the original pair, so distinct tools never share a name and the result is stable.
 */
export function bridgedToolName(server: string, tool: string): string {
  const raw = `mcp__${server}__${tool}`
  if (NAME.test(raw)) return raw
  const hash = createHash('sha256').update(`${server}\u0000${tool}`).digest('hex').slice(0, 8)
  const clean = raw.replace(/[^A-Za-z0-9_-]/g, '_')
  return `${clean.slice(0, 64 - 9)}_${hash}`
}

/** What MCP tool results may contain (the 2025-11-25 content blocks). */
export type McpContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name?: string; title?: string; mimeType?: string; description?: string }
  | {
      type: 'resource'
      resource: { uri: string; mimeType?: string; text?: string; blob?: string }
    }
  | { type: string; [key: string]: unknown }

/** A non-text block, for surfaces (in the result's `details`); an image the store took has its `ref`. */
export interface McpAttachment {
  kind: 'image' | 'audio' | 'resource' | 'resource_link' | 'unknown'
  mimeType?: string
  uri?: string
  /** Decoded size of inline binary data. */
  bytes?: number
  /** The attachment store's reference, when the image was stored and shown to the model. */
  ref?: string
}

/** Stores an image's bytes and returns its reference (`ctx.attachments.put`), or throws why not. */
export type StoreImage = (bytes: Uint8Array, mimeType: string) => Promise<{ ref: string; mimeType: string }>

function base64Bytes(data: string): number {
  const trimmed = data.replace(/=+$/, '')
  return Math.floor((trimmed.length * 3) / 4)
}

/**
 * Converts MCP result content into native tool-result content: text stays text, embedded text
 * resources become text, images go to the attachment store (`storeImage`) and follow the text as image
 * blocks, everything else (audio, blobs, links, images without a store) becomes a one-line text
 * placeholder plus an attachment record. Text beyond `maxChars` is cut with a note.
 */
export async function convertContent(
  blocks: readonly McpContentBlock[],
  structured: unknown,
  maxChars: number,
  storeImage?: StoreImage,
): Promise<{ content: ToolResultContent[]; attachments: McpAttachment[] }> {
  const texts: string[] = []
  const attachments: McpAttachment[] = []
  const images: ToolResultContent[] = []
  for (const block of blocks) {
    if (block.type === 'text' && typeof block.text === 'string') {
      texts.push(block.text)
    } else if (block.type === 'image' && typeof block.data === 'string' && storeImage) {
      // Images go to the attachment store and reach the model as image blocks (by reference).
      const mimeType = String(block.mimeType ?? 'application/octet-stream')
      const bytes = Buffer.from(block.data, 'base64')
      try {
        const stored = await storeImage(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), mimeType)
        attachments.push({ kind: 'image', mimeType: stored.mimeType, bytes: bytes.byteLength, ref: stored.ref })
        texts.push(`[image ${stored.mimeType}, ${bytes.byteLength} bytes: attached]`)
        images.push({ type: 'image', ref: stored.ref, mimeType: stored.mimeType })
      } catch (error) {
        attachments.push({ kind: 'image', mimeType, bytes: bytes.byteLength })
        texts.push(
          `[image ${mimeType}, ${bytes.byteLength} bytes: not shown (${error instanceof Error ? error.message : String(error)})]`,
        )
      }
    } else if ((block.type === 'image' || block.type === 'audio') && typeof block.data === 'string') {
      const mimeType = String(block.mimeType ?? 'application/octet-stream')
      const bytes = base64Bytes(block.data)
      attachments.push({ kind: block.type, mimeType, bytes })
      texts.push(`[${block.type} ${mimeType}, ${bytes} bytes: not shown to the model]`)
    } else if (block.type === 'resource_link' && typeof block.uri === 'string') {
      const name = typeof block.name === 'string' ? ` "${block.name}"` : ''
      const mime = typeof block.mimeType === 'string' ? ` (${block.mimeType})` : ''
      attachments.push({ kind: 'resource_link', uri: block.uri, ...(mime ? { mimeType: String(block.mimeType) } : {}) })
      texts.push(`[resource link${name}: ${block.uri}${mime}]`)
    } else if (block.type === 'resource' && block.resource && typeof block.resource === 'object') {
      const resource = block.resource as { uri?: unknown; mimeType?: unknown; text?: unknown; blob?: unknown }
      const uri = String(resource.uri ?? '')
      const mimeType = typeof resource.mimeType === 'string' ? resource.mimeType : undefined
      if (typeof resource.text === 'string') {
        texts.push(`[resource ${uri}${mimeType ? ` (${mimeType})` : ''}]\n${resource.text}`)
      } else {
        const bytes = typeof resource.blob === 'string' ? base64Bytes(resource.blob) : 0
        attachments.push({ kind: 'resource', uri, bytes, ...(mimeType ? { mimeType } : {}) })
        texts.push(`[resource ${uri}${mimeType ? ` (${mimeType})` : ''}, ${bytes} bytes of binary: not shown]`)
      }
    } else {
      attachments.push({ kind: 'unknown' })
      texts.push(`[unsupported MCP content block of type "${String(block.type)}"]`)
    }
  }
  if (texts.length === 0 && structured !== undefined) texts.push(JSON.stringify(structured, null, 2))
  let text = texts.join('\n')
  if (text.length > maxChars) {
    text = `${text.slice(0, maxChars)}\n[output truncated: ${text.length - maxChars} more characters]`
  }
  return { content: [{ type: 'text', text: text === '' ? '(no content)' : text }, ...images], attachments }
}
