// Row `session-search`, module `@dsh/coding-tools/session-search`: the `session_search` tool. The model
// searches the earlier sessions of its workspace through the full-text index of ctx.sessionQuery,
// then reads the events around a hit. Read-only: it never opens a session for writing.
import { sep } from 'node:path'
import { defineTool, ToolError } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import { isEvent, type SessionEvent } from '@dsh/session'
import type {} from '@dsh/session/store/query'

export const name = 'session-search'
export const inject = ['tools', 'sessionQuery', 'sessions']

const MAX_HITS = 50
const MAX_RADIUS = 20
const CLIP = 600

const clip = (text: string, max = CLIP) =>
  text.length > max ? `${text.slice(0, max)}… [${text.length - max} more]` : text
const inside = (cwd: string, workspace: string) => cwd === workspace || cwd.startsWith(workspace + sep)

/** One event as a line the model can read (only what it or the person saw). */
function line(event: SessionEvent): string | undefined {
  const text = (content: readonly { type: string; text?: string }[]) =>
    content.flatMap((block) => (block.type === 'text' && block.text ? [block.text] : [])).join('\n')
  if (isEvent(event, 'user/message')) return `#${event.seq} user: ${clip(text(event.data.message.content))}`
  if (isEvent(event, 'assistant/message')) {
    const calls = event.data.message.content.flatMap((block) =>
      block.type === 'tool-call' ? [`${block.name}(${clip(JSON.stringify(block.arguments), 200)})`] : [],
    )
    const said = text(event.data.message.content)
    return `#${event.seq} assistant: ${clip(said)}${calls.length ? ` [calls ${calls.join(', ')}]` : ''}`
  }
  if (isEvent(event, 'tool/result')) {
    const message = event.data.message
    return `#${event.seq} ${message.toolName}${message.isError ? ' (error)' : ''}: ${clip(text(message.content))}`
  }
  return undefined
}

export function apply(ctx: Context): void {
  const tool = defineTool<{ query?: string; session?: string; seq?: number; radius?: number; limit?: number }>({
    name: 'session_search',
    deferred: true,
    readOnly: true,
    description: [
      'Search the earlier sessions of this workspace (full text: every word must match), or read the events around a hit.',
      '- `query`: words to find; returns hits as `session seq: snippet` with matches in [brackets], best first.',
      '- `session` + `seq`: the user, assistant and tool-result events around that event (`radius` events each side, default 6).',
      'The current session is not searched (you have it). Failures: `[search off]` the index is disabled in this dsh;',
      '`[not found]` no such session here.',
    ].join('\n'),
    mode: 'parallel-safe',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Words to search for.' },
        session: { type: 'string', description: 'A session id from a hit, to read around `seq`.' },
        seq: { type: 'integer', minimum: 0, description: 'The event to read around.' },
        radius: { type: 'integer', minimum: 1, maximum: MAX_RADIUS, description: 'Events each side (default 6).' },
        limit: { type: 'integer', minimum: 1, maximum: MAX_HITS, description: 'Hits at most (default 10).' },
      },
      additionalProperties: false,
    },
    presentation: (args) => ({
      kind: 'generic',
      title: 'Search sessions',
      subtitle: args.query ?? `${args.session ?? ''} #${args.seq ?? ''}`,
    }),
    async execute(args, call) {
      const query = ctx.sessionQuery
      const current = call.sessionId ? ctx.sessions.get(call.sessionId) : undefined
      const workspace = current?.header.cwd
      const summaries = (await query.list()).filter(
        (summary) => summary.id !== call.sessionId && (workspace === undefined || inside(summary.cwd, workspace)),
      )
      const known = new Map(summaries.map((summary) => [summary.id, summary]))
      if (args.session !== undefined) {
        if (!known.has(args.session)) {
          throw new ToolError(`[not found] no earlier session ${args.session} in this workspace.`, 'SESSION_NOT_FOUND')
        }
        const session = await query.read(args.session)
        const at = args.seq ?? 0
        const radius = args.radius ?? 6
        // Radius counts readable events (messages and results), not stream chunks.
        const readable = (session.events as readonly SessionEvent[]).flatMap((event) => {
          const text = line(event)
          return text === undefined ? [] : [{ seq: event.seq, text }]
        })
        let index = readable.findIndex((event) => event.seq >= at)
        if (index < 0) index = readable.length - 1
        const near = readable.slice(Math.max(0, index - radius), index + radius + 1).map((event) => event.text)
        return `session ${session.id} (${session.header.cwd}), around #${at}:\n${near.join('\n') || '(nothing readable there)'}`
      }
      if (!args.query?.trim())
        throw new ToolError('Give `query` to search, or `session` and `seq` to read.', 'INVALID_ARGUMENTS')
      if (query.indexPath === undefined) {
        throw new ToolError(
          '[search off] the session index is disabled (session-query row without `search`).',
          'SESSION_SEARCH_DISABLED',
        )
      }
      const limit = args.limit ?? 10
      const hits = (await query.search(args.query, { limit: Math.min(500, limit * 10) }))
        .filter((hit) => known.has(hit.sessionId))
        .slice(0, limit)
      if (hits.length === 0) return `No earlier session of this workspace mentions: ${args.query}`
      return hits
        .map((hit) => {
          const summary = known.get(hit.sessionId)
          const title = summary?.title ? ` "${clip(summary.title, 60)}"` : ''
          return `${hit.sessionId} #${hit.seq} (${hit.type})${title}: ${hit.snippet.replace(/\s+/g, ' ')}`
        })
        .join('\n')
    },
  })
  ctx.tools.register(tool)
}

export default { name, inject, apply }
