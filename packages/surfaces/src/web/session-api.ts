// Session management on the page: full-text search over every durable session (ctx.sessionQuery),
// rename, delete and export (the same code paths as `dsh sessions`, through the session host), and
// the workspace list (recent directories, derived from the sessions' cwd).
import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/session/store/query'
import { EXPORT_FORMATS, type ExportFormat } from '../host/index.js'
import type { SearchHitView, WorkspacesView } from './protocol.js'
import type { HostState } from './state.js'

/** What `route` answers when the request is not one of its own. */
export const NOT_SESSIONS = Symbol('not a session-management route')

const ACTION = /^\/api\/sessions\/([A-Za-z0-9_.-]+)\/(rename|delete)$/
export const EXPORT_PATH = /^\/api\/sessions\/([A-Za-z0-9_.-]+)\/export$/
const MAX_HITS = 50
const MAX_WORKSPACES = 20

export class SessionApi {
  constructor(
    private readonly ctx: Context,
    private readonly state: HostState,
  ) {}

  async route(method: string, url: URL, body: Record<string, unknown>, loopback: boolean): Promise<unknown> {
    const path = url.pathname
    if (method === 'GET' && path === '/api/search') return { hits: await this.search(url) }
    if (method === 'GET' && path === '/api/workspaces') return this.workspaces(loopback)
    const action = ACTION.exec(path)
    if (method !== 'POST' || !action) return NOT_SESSIONS
    const id = action[1] as string
    if (action[2] === 'delete') {
      const report = await this.state.host.remove(id)
      return { removed: report.removed, ...(report.blobs ? { blobs: report.blobs } : {}) }
    }
    const title = body.title
    if (typeof title !== 'string') throw badParams('"title" must be a string: send { "title": "new name" }')
    return { sessionId: id, title: await this.state.host.rename(id, title) }
  }

  private async search(url: URL): Promise<SearchHitView[]> {
    const text = url.searchParams.get('q')?.trim()
    if (!text) throw badParams('"q" is missing: send /api/search?q=words')
    const query = this.ctx.get('sessionQuery')
    if (!query) throw new HarnessError('NOT_AVAILABLE', 'the profile has no session-query row; enable it to search', {})
    const limit = Math.min(Number(url.searchParams.get('limit')) || 20, MAX_HITS)
    const [hits, sessions] = await Promise.all([query.search(text, { limit }), this.state.list()])
    const byId = new Map(sessions.map((session) => [session.sessionId, session]))
    return hits.map((hit) => {
      const session = byId.get(hit.sessionId)
      return {
        ...hit,
        ...(session?.title ? { title: session.title } : {}),
        ...(session ? { cwd: session.cwd } : {}),
      }
    })
  }

  private async workspaces(loopback: boolean): Promise<WorkspacesView> {
    const seen = new Map<string, WorkspacesView['workspaces'][number]>()
    // The list is newest first, so the first row of a directory is its last use.
    for (const session of await this.state.list()) {
      const row = seen.get(session.cwd)
      if (row) row.sessions += 1
      else seen.set(session.cwd, { cwd: session.cwd, sessions: 1, updatedAt: session.updatedAt })
    }
    return { workspaces: [...seen.values()].slice(0, MAX_WORKSPACES), canChoose: loopback }
  }
}

/** `GET /api/sessions/:id/export?format=md|jsonl`: the file `dsh sessions export` prints, as a download. */
export async function serveExport(
  state: HostState,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
  url: URL,
): Promise<void> {
  const format = (url.searchParams.get('format') ?? 'md') as ExportFormat
  if (!EXPORT_FORMATS.includes(format)) throw badParams(`"format" must be one of ${EXPORT_FORMATS.join(', ')}`)
  const body = Buffer.from(`${(await state.host.export(id, format)).join('\n')}\n`)
  res.writeHead(200, {
    'Content-Type': format === 'md' ? 'text/markdown; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    'Content-Length': body.byteLength,
    'Content-Disposition': `attachment; filename="dsh-${id}.${format}"`,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  })
  res.end(req.method === 'HEAD' ? undefined : body)
}

function badParams(message: string): HarnessError {
  return new HarnessError('INVALID_PARAMS', message, {})
}
