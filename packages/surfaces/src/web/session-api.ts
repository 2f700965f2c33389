// Session management on the page: full-text search over every durable session (ctx.sessionQuery),
// export (the same code path as `dsh sessions export`, through the session host), and the workspace
// list (recent directories, derived from the sessions' cwd).
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/session/store/query'
import type { ExportFormat, SessionHost } from '../host/index.js'
import type { SearchHitView, WireFile, WorkspacesView } from '../wire/types.js'
import { embeddedChildren, embeddedImages, sessionHtml } from './html-export.js'

const MAX_HITS = 50
const MAX_WORKSPACES = 20

/** Events of durable sessions whose text matches `text`, with their session's title and cwd. */
export async function searchSessions(
  ctx: Context,
  host: SessionHost,
  text: string,
  limit = 20,
): Promise<SearchHitView[]> {
  const query = ctx.get('sessionQuery')
  if (!query) throw new HarnessError('NOT_AVAILABLE', 'the profile has no session-query row; enable it to search', {})
  const [hits, sessions] = await Promise.all([
    query.search(text.trim(), { limit: Math.min(limit, MAX_HITS) }),
    host.list(),
  ])
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

/** Directories sessions ran in, most recently used first; `canChoose`: the client may pick another. */
export async function workspacesView(host: SessionHost, canChoose: boolean): Promise<WorkspacesView> {
  const seen = new Map<string, WorkspacesView['workspaces'][number]>()
  // The list is newest first, so the first row of a directory is its last use.
  for (const session of await host.list()) {
    const row = seen.get(session.cwd)
    if (row) row.sessions += 1
    else seen.set(session.cwd, { cwd: session.cwd, sessions: 1, updatedAt: session.updatedAt })
  }
  return { workspaces: [...seen.values()].slice(0, MAX_WORKSPACES), canChoose }
}

/** The file `dsh sessions export` prints. */
export async function exportFile(
  host: SessionHost,
  sessionId: string,
  format: ExportFormat | 'html',
  options: { toolOutput?: boolean } = {},
): Promise<WireFile> {
  if (format === 'html') {
    const session = await host.read(sessionId)
    const images = await embeddedImages(session, (ref) => host.blob(ref))
    const children = await embeddedChildren(session, (id) => host.read(id))
    return {
      name: `dsh-${sessionId}.html`,
      type: 'text/html; charset=utf-8',
      text: sessionHtml(session, { dropToolOutput: options.toolOutput === false, images, children }),
    }
  }
  return {
    name: `dsh-${sessionId}.${format}`,
    type: format === 'md' ? 'text/markdown; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    text: `${(await host.export(sessionId, format)).join('\n')}\n`,
  }
}
