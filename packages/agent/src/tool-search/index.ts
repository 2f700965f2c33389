// @dsh/agent/tool-search: fewer tokens before any work. When tool search is active, a request carries
// the core tools and `tool_search`, not the schemas of deferred tools (every MCP tool, and the tools
// that declare `deferred: true` because they are rarely needed). `tool_search({ query })` finds
// deferred tools by name and description (or `select:a,b` by exact name) and loads them: from the
// next request on their schemas are sent with every request of the session.
//
// Which tools are loaded is folded from the session log, never kept aside: the first line of each
// successful `tool_search` result names the tools it loaded (the model read exactly that), and a
// deferred tool the model called anyway (it runs: its arguments are validated against the real
// schema, whose text an invalid call gets back) counts as loaded too. Resume, fork and replay
// therefore derive the same requests. Decision 475.
//
// Active or not is the `tools.search` setting: `auto` (default) when the deferred tools a request
// would carry number more than `tools.searchThreshold` (default 20), `on` whenever there is one,
// `off` never. `/context` shows the schemas not sent (`ctx.toolSearch.notSent`).

import { type Context, deepFreeze, directService, HarnessError, Service } from '@dsh/kernel'
import type { ToolSchema } from '@dsh/llm'
import type { AnySessionEvent, Session } from '@dsh/session'
import type {} from '@dsh/settings'
import type { RequestDraft } from '../index.js'
import { defineTool, type ToolDefinition } from '../tools/define.js'
import type {} from '../tools/index.js'

export const TOOL_SEARCH = 'tool_search'
/** The first line of a `tool_search` result that loaded tools: this prefix, then the names, comma-separated. */
export const LOADED_PREFIX = 'Loaded tools: '

export type ToolSearchMode = 'auto' | 'on' | 'off'

declare module '@dsh/settings' {
  interface SettingsMap {
    /** Send deferred tools (MCP tools, rarely used ones) only once `tool_search` loaded them. */
    'tools.search': ToolSearchMode
    /** `auto` turns tool search on past this many deferred tools. */
    'tools.searchThreshold': number
  }
}

declare module 'cordis' {
  interface Context {
    toolSearch: ToolSearchService
  }
}

export interface ToolSearchConfig {
  /** The default of the `tools.search` setting. Default `auto`. */
  mode?: ToolSearchMode
  /** The default of `tools.searchThreshold`: `auto` is on past this many deferred tools. Default 20. */
  threshold?: number
  /** Most tools one query loads (the model may ask for fewer with `limit`). Default 5. */
  maxResults?: number
}

/** What the folded log says: tools a `tool_search` result loaded, and tools the model called. */
interface Fold {
  scanned: number
  loaded: Set<string>
  called: Set<string>
  /** Bumped when either set grows: a cache key of the shaped tool list. */
  version: number
}

/** The last request's shaping of one session: its input and output, and the schemas it left out. */
interface Shaped {
  input: readonly ToolSchema[]
  version: number
  mode: string
  tools: readonly ToolSchema[]
  notSent: readonly ToolSchema[]
}

const MCP_NAME = /^(mcp__[^_]+(?:_[^_]+)*?__)(.+)$/

/** The names a `tool_search` result's text says it loaded (its first line), or none. */
export function loadedNames(text: string): string[] {
  const first = text.split('\n', 1)[0] ?? ''
  if (!first.startsWith(LOADED_PREFIX)) return []
  return first
    .slice(LOADED_PREFIX.length)
    .split(',')
    .map((name) => name.trim())
    .filter((name) => /^[A-Za-z0-9_-]{1,64}$/.test(name))
}

/** The compact catalog of deferred tool names: MCP tools grouped by server prefix. */
export function catalog(names: readonly string[]): string {
  const groups = new Map<string, string[]>()
  const plain: string[] = []
  for (const name of names) {
    const match = MCP_NAME.exec(name)
    if (!match) {
      plain.push(name)
      continue
    }
    const prefix = match[1] as string
    const group = groups.get(prefix) ?? []
    group.push(match[2] as string)
    groups.set(prefix, group)
  }
  const lines = [...groups.entries()].map(([prefix, tools]) => `${prefix}{${tools.join(', ')}}`)
  if (plain.length > 0) lines.push(plain.join(', '))
  return lines.join('\n')
}

/**
 * Scores deferred tools against a query: a word equal to a part of the name (split at `_` and `-`)
 * counts 4, a word inside the name 2, a word in the description 1; the whole query equal to the name
 * (or its MCP tool part) wins outright. Returns the tools with a score, best first, then by name.
 */
export function rank(tools: readonly ToolDefinition[], query: string): ToolDefinition[] {
  const q = query.trim().toLowerCase()
  const words = q.split(/[^a-z0-9]+/).filter((word) => word.length > 0)
  const scored: { tool: ToolDefinition; score: number }[] = []
  for (const tool of tools) {
    const name = tool.name.toLowerCase()
    const short = MCP_NAME.exec(name)?.[2] ?? name
    const parts = name.split(/[_-]+/)
    const description = tool.description.toLowerCase()
    let score = name === q || short === q ? 100 : 0
    for (const word of words) {
      if (parts.includes(word)) score += 4
      else if (name.includes(word)) score += 2
      if (description.includes(word)) score += 1
    }
    if (score > 0) scored.push({ tool, score })
  }
  scored.sort((a, b) => b.score - a.score || (a.tool.name < b.tool.name ? -1 : a.tool.name > b.tool.name ? 1 : 0))
  return scored.map((entry) => entry.tool)
}

function describe(names: readonly string[]): string {
  return [
    'Find and load tools that are not sent up front. A loaded tool is sent with every later request of this',
    'session: call it directly from your next step. `query`: words for what you need (matched against names',
    'and descriptions), or `select:NAME1,NAME2` to load tools by exact name. Tools not loaded yet:',
    catalog(names),
  ].join('\n')
}

export class ToolSearchService extends Service {
  static readonly provide = 'toolSearch'
  static readonly inject = ['tools']
  readonly mode: ToolSearchMode
  readonly threshold: number
  readonly maxResults: number
  readonly home: Context
  private readonly settings: () => Context['settings'] | undefined
  private readonly _folds = new WeakMap<Session, Fold>()
  private readonly _shaped = new WeakMap<Session, Shaped>()

  constructor(ctx: Context, config: ToolSearchConfig = {}) {
    const c = config ?? {}
    const mode = c.mode ?? 'auto'
    if (mode !== 'auto' && mode !== 'on' && mode !== 'off') {
      throw new HarnessError('INVALID_TOOL_SEARCH_CONFIG', 'tool-search: mode must be auto, on or off', { mode })
    }
    super(ctx, 'toolSearch')
    this.home = ctx
    this.mode = mode
    this.threshold = c.threshold ?? 20
    this.maxResults = c.maxResults ?? 5
    this.settings = directService(ctx, 'settings')
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('tools.search', {
        schema: { enum: ['auto', 'on', 'off'] },
        default: mode,
        description:
          'send MCP tools and rarely used tools only once the model loads them with tool_search (auto: past tools.searchThreshold of them)',
        env: 'DSH_TOOL_SEARCH',
        allowed: 'auto, on or off',
        projectSafe: true,
      })
      inner.settings.define('tools.searchThreshold', {
        schema: { type: 'integer', minimum: 0 },
        default: this.threshold,
        description: 'with tools.search auto, tool search is on when more tools than this could be deferred',
        env: 'DSH_TOOL_SEARCH_THRESHOLD',
        allowed: 'a number of tools, e.g. 10',
        projectSafe: true,
      })
    })
    ctx.tools.register(this.tool())
    ctx.on('agent/request', async (_draft: RequestDraft, next: () => Promise<RequestDraft>) => {
      const draft = await next()
      const tools = this.shape(draft)
      return tools === draft.tools ? draft : { ...draft, tools }
    })
  }

  /** The `tools.search` setting (the row's `mode` without a settings row). */
  currentMode(): ToolSearchMode {
    const settings = this.settings()
    const value = settings?.has('tools.search') ? settings.get('tools.search') : undefined
    return value === 'on' || value === 'off' || value === 'auto' ? value : this.mode
  }

  currentThreshold(): number {
    const settings = this.settings()
    const value = settings?.has('tools.searchThreshold') ? settings.get('tools.searchThreshold') : undefined
    return typeof value === 'number' && value >= 0 ? value : this.threshold
  }

  /** Folds the events appended since the last read: loaded names from results, called names from calls. */
  fold(session: Session): Fold {
    let fold = this._folds.get(session)
    if (!fold) {
      fold = { scanned: 0, loaded: new Set(), called: new Set(), version: 0 }
      this._folds.set(session, fold)
    }
    const events = session.events
    for (; fold.scanned < events.length; fold.scanned++) {
      const event = events[fold.scanned] as AnySessionEvent
      if (event.type === 'tool/call') {
        if (!fold.called.has(event.data.call.name)) {
          fold.called.add(event.data.call.name)
          fold.version++
        }
      } else if (event.type === 'tool/result') {
        const message = event.data.message
        if (message.toolName !== TOOL_SEARCH || message.isError) continue
        const first = message.content[0]
        if (first?.type !== 'text') continue
        for (const name of loadedNames(first.text)) {
          if (fold.loaded.has(name)) continue
          fold.loaded.add(name)
          fold.version++
        }
      }
    }
    return fold
  }

  /** The tool names the session's log has loaded (by `tool_search`, or by calling them). */
  loaded(session: Session): Set<string> {
    const fold = this.fold(session)
    return new Set([...fold.loaded, ...fold.called])
  }

  /**
   * The tools of a request: unchanged when search is off or not active, else the non-deferred tools,
   * the loaded deferred ones, and `tool_search` whose description lists the rest. The same input and
   * log give the same (frozen) list.
   */
  shape(draft: RequestDraft): readonly ToolSchema[] {
    const input = draft.tools
    const session = draft.session
    const search = input.find((tool) => tool.name === TOOL_SEARCH)
    if (!search) return input // this agent may not use tool_search: every tool is sent
    const mode = this.currentMode()
    const threshold = this.currentThreshold()
    const fold = this.fold(session)
    const key = `${mode}:${threshold}`
    const cached = this._shaped.get(session)
    if (cached && cached.input === input && cached.version === fold.version && cached.mode === key) return cached.tools
    const record = (tools: readonly ToolSchema[], notSent: readonly ToolSchema[]) => {
      this._shaped.set(session, { input, version: fold.version, mode: key, tools, notSent })
      return tools
    }
    const without = () => deepFreeze(input.filter((tool) => tool !== search))
    if (mode === 'off') return record(without(), [])
    const registry = this.home.tools
    const scope = { agentId: draft.agent.id, restrictions: draft.agent.toolRestrictions }
    const definitions = new Map(registry.tools(scope).map((tool) => [tool.name, tool]))
    const deferred = input.filter((tool) => tool !== search && definitions.get(tool.name)?.deferred === true)
    const active = mode === 'on' ? deferred.length > 0 : deferred.length > threshold
    if (!active) return record(without(), [])
    const notSent = deferred.filter((tool) => !fold.loaded.has(tool.name) && !fold.called.has(tool.name))
    if (notSent.length === 0) return record(without(), [])
    const left = new Set(notSent)
    const tools = deepFreeze(
      input
        .filter((tool) => !left.has(tool))
        .map((tool) =>
          tool === search
            ? { name: search.name, description: describe(notSent.map((t) => t.name)), parameters: search.parameters }
            : tool,
        ),
    )
    return record(tools, notSent)
  }

  /**
   * The deferred tool schemas the last request of `session` left out (what `/context` reports as
   * saved). For a session no request of this process shaped yet (just resumed), an estimate from its
   * last logged request: when that one carried `tool_search`, the deferred tools registered now (the
   * global layer) that it did not carry. `undefined` when the session has no request.
   */
  notSent(session: Session): readonly ToolSchema[] | undefined {
    const shaped = this._shaped.get(session)
    if (shaped) return shaped.notSent
    const header = session.events.findLast((event) => event.type === 'request/header')
    if (!header) return undefined
    const carried = new Set((session.requestOf(header.seq).tools ?? []).map((tool) => tool.name))
    if (!carried.has(TOOL_SEARCH)) return []
    return this.home.tools
      .tools()
      .filter((tool) => tool.deferred && !carried.has(tool.name))
      .map((tool) => tool.schema)
  }

  private tool() {
    return defineTool<{ query: string; limit?: number }>({
      name: TOOL_SEARCH,
      readOnly: true,
      mode: 'parallel-safe',
      description:
        'Find and load tools that are not sent up front (query: words, or select:NAME1,NAME2 for exact names).',
      parameters: {
        type: 'object',
        properties: {
          query: {
            type: 'string',
            description: 'Words for what the tool should do, or select:NAME1,NAME2 to load tools by exact name.',
          },
          limit: { type: 'integer', minimum: 1, maximum: 20, description: 'Most tools to load (default 5).' },
        },
        required: ['query'],
        additionalProperties: false,
      },
      presentation: (args) => ({ kind: 'generic', title: 'Tool search', subtitle: args.query }),
      execute: (args, call) => {
        const agent = call.agentId === undefined ? undefined : this.home.get('agents')?.get(call.agentId)
        const scope = {
          ...(call.agentId === undefined ? {} : { agentId: call.agentId }),
          ...(agent ? { restrictions: agent.toolRestrictions } : {}),
        }
        const visible = this.home.tools.tools(scope)
        const deferred = visible.filter((tool) => tool.deferred)
        const query = args.query.trim()
        let found: ToolDefinition[]
        const notes: string[] = []
        if (query.toLowerCase().startsWith('select:')) {
          const names = query
            .slice('select:'.length)
            .split(',')
            .map((name) => name.trim())
            .filter((name) => name.length > 0)
          found = []
          for (const name of names) {
            const tool = deferred.find((candidate) => candidate.name === name)
            if (tool) found.push(tool)
            else if (visible.some((candidate) => candidate.name === name))
              notes.push(`${name} is always sent: call it directly.`)
            else notes.push(`No tool is named ${name}.`)
          }
        } else {
          found = rank(deferred, query).slice(0, Math.min(args.limit ?? this.maxResults, 20))
        }
        if (found.length === 0) {
          return [
            `No deferred tool matches ${JSON.stringify(query)}.`,
            ...notes,
            'Try other words, or select:NAME with a name from the list in the tool_search description.',
          ].join('\n')
        }
        return [
          `${LOADED_PREFIX}${found.map((tool) => tool.name).join(', ')}`,
          'Their schemas are sent from your next request on: call them directly.',
          ...notes,
          '',
          ...found.map((tool) => `${tool.name}: ${tool.description}`),
        ].join('\n')
      },
    })
  }
}

export default ToolSearchService
