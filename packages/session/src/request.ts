// What a request saw, stored by content: a `request/header` carries the system prompt and the tool
// schemas the first time this log sees them, with their hashes; later headers with the same content
// carry only the hashes. A header is rebuilt exactly from the log by looking the hashes up in the
// earlier headers (a fork copies them with its prefix, so a child resolves its parent's requests too).
// Headers written without hashes (older logs) carry their bodies and resolve as they are.
import { createHash } from 'node:crypto'
import type { LlmCallConfig, ToolSchema } from '@dsh/llm'
import type { SessionEvent } from './events.js'

/** A request header with its bodies, as sent. */
export interface RequestRecord {
  config: LlmCallConfig
  system?: string
  tools?: readonly ToolSchema[]
  reason?: string
}

/** The content address of a body: sha256 of its text (the system prompt, or the tools' JSON), hex. */
export function contentHash(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

type Header = SessionEvent<'request/header'>['data']

/** The bodies a log has stored, by hash, and the hashing of the last bodies seen (memoised by identity). */
export class RequestContents {
  readonly #systems = new Map<string, string>()
  readonly #tools = new Map<string, readonly ToolSchema[]>()
  #lastSystem: { text: string; hash: string } | undefined
  #lastTools: { list: readonly ToolSchema[]; hash: string } | undefined

  /** The header data to log for `request`: bodies this log already holds are replaced by their hash. */
  compose(request: RequestRecord): Header {
    const { config, system, tools, reason } = request
    const data: Header = { config }
    if (system !== undefined) {
      const hash = this.#hashSystem(system)
      data.systemHash = hash
      if (!this.#systems.has(hash)) data.system = system
    }
    if (tools !== undefined) {
      const hash = this.#hashTools(tools)
      data.toolsHash = hash
      if (!this.#tools.has(hash)) data.tools = tools
    }
    if (reason !== undefined) data.reason = reason
    return data
  }

  /** The structural problem of a header's content references, or undefined. */
  check(data: Record<string, unknown>): string | undefined {
    const { system, systemHash, tools, toolsHash } = data
    if (system !== undefined && typeof system !== 'string') return 'system is not a string'
    if (tools !== undefined && !Array.isArray(tools)) return 'tools is not an array'
    if (systemHash !== undefined) {
      if (typeof systemHash !== 'string') return 'systemHash is not a string'
      if (system === undefined && !this.#systems.has(systemHash)) {
        return `systemHash ${systemHash} names a system prompt no earlier request/header of this log carries`
      }
      // A body stored under the wrong hash would make every later header resolve to it.
      if (typeof system === 'string' && contentHash(system) !== systemHash) return 'system does not match systemHash'
    }
    if (toolsHash !== undefined) {
      if (typeof toolsHash !== 'string') return 'toolsHash is not a string'
      if (tools === undefined && !this.#tools.has(toolsHash)) {
        return `toolsHash ${toolsHash} names tool schemas no earlier request/header of this log carries`
      }
      if (Array.isArray(tools) && contentHash(JSON.stringify(tools)) !== toolsHash)
        return 'tools do not match toolsHash'
    }
    return undefined
  }

  /** Records the bodies an accepted header carries. */
  accept(data: Header): void {
    if (data.systemHash !== undefined && data.system !== undefined) this.#systems.set(data.systemHash, data.system)
    if (data.toolsHash !== undefined && data.tools !== undefined) this.#tools.set(data.toolsHash, data.tools)
  }

  /** The request a header describes, bodies included. */
  resolve(data: Header): RequestRecord {
    const record: RequestRecord = { config: data.config }
    const system = data.system ?? (data.systemHash === undefined ? undefined : this.#systems.get(data.systemHash))
    const tools = data.tools ?? (data.toolsHash === undefined ? undefined : this.#tools.get(data.toolsHash))
    if (system !== undefined) record.system = system
    if (tools !== undefined) record.tools = tools
    if (data.reason !== undefined) record.reason = data.reason
    return record
  }

  #hashSystem(text: string): string {
    if (this.#lastSystem?.text !== text) this.#lastSystem = { text, hash: contentHash(text) }
    return this.#lastSystem.hash
  }

  #hashTools(list: readonly ToolSchema[]): string {
    // A frozen list (the tools service hands out one per version) keeps its hash; others are hashed.
    if (this.#lastTools?.list !== list) {
      const hash = contentHash(JSON.stringify(list))
      if (!Object.isFrozen(list)) return hash
      this.#lastTools = { list, hash }
    }
    return this.#lastTools.hash
  }
}
