// `session/list`: the durable sessions (`ctx.sessionQuery`) plus the connection's live sessions whose
// first write has not landed yet, most recent first, optionally only those of one `cwd`, in pages
// whose cursor is an opaque offset.
import { isAbsolute } from 'node:path'
import * as acp from '@agentclientprotocol/sdk'
import type { Context } from '@dsh/kernel'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session-store/query'

const PAGE = 100

function offsetOf(cursor: string | null | undefined): number {
  if (cursor === undefined || cursor === null) return 0
  const offset = /^\d{1,9}$/.test(cursor) ? Number(cursor) : Number.NaN
  if (!Number.isSafeInteger(offset)) {
    throw acp.RequestError.invalidParams({ cursor }, 'cursor must be a nextCursor from an earlier session/list')
  }
  return offset
}

/** Whether `ctx` can list sessions (what `sessionCapabilities.list` advertises). */
export function canListSessions(ctx: Context): boolean {
  return Boolean(ctx.get('sessionQuery'))
}

export async function listSessions(
  ctx: Context,
  params: acp.ListSessionsRequest,
  live: readonly Session[],
): Promise<acp.ListSessionsResponse> {
  const offset = offsetOf(params.cursor)
  if (params.cwd && !isAbsolute(params.cwd)) {
    throw acp.RequestError.invalidParams({ cwd: params.cwd }, 'cwd must be an absolute path (or left out)')
  }
  const query = ctx.get('sessionQuery')
  if (!query) throw acp.RequestError.methodNotFound(acp.methods.agent.session.list)
  const sessions: acp.SessionInfo[] = (await query.list())
    .filter((summary) => !summary.error)
    .map((summary) => ({
      sessionId: summary.id,
      cwd: summary.cwd,
      ...(summary.title ? { title: summary.title } : {}),
      updatedAt: new Date(summary.updatedAt).toISOString(),
    }))
  for (const session of live) {
    if (sessions.some((info) => info.sessionId === session.id)) continue
    const updatedAt = session.events.at(-1)?.time ?? session.header.createdAt
    sessions.unshift({ sessionId: session.id, cwd: session.header.cwd, updatedAt: new Date(updatedAt).toISOString() })
  }
  const wanted = params.cwd ? sessions.filter((info) => info.cwd === params.cwd) : sessions
  const page = wanted.slice(offset, offset + PAGE)
  const next = offset + PAGE
  return next < wanted.length ? { sessions: page, nextCursor: String(next) } : { sessions: page }
}
