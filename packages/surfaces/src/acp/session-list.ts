// `session/list`: the session host's list (durable sessions plus the connection's live ones whose
// first write has not landed yet), most recent first, optionally only those of one `cwd`, in pages
// whose cursor is an opaque offset.
import { isAbsolute } from 'node:path'
import * as acp from '@agentclientprotocol/sdk'
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/session/store/query'
import type { HostedSession } from '../host/index.js'

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
  list: () => Promise<HostedSession[]>,
): Promise<acp.ListSessionsResponse> {
  const offset = offsetOf(params.cursor)
  if (params.cwd && !isAbsolute(params.cwd)) {
    throw acp.RequestError.invalidParams({ cwd: params.cwd }, 'cwd must be an absolute path (or left out)')
  }
  if (!canListSessions(ctx)) throw acp.RequestError.methodNotFound(acp.methods.agent.session.list)
  const sessions: acp.SessionInfo[] = (await list())
    .filter((summary) => !summary.error)
    .map((summary) => ({
      sessionId: summary.sessionId,
      cwd: summary.cwd,
      ...(summary.title ? { title: summary.title } : {}),
      updatedAt: new Date(summary.updatedAt).toISOString(),
    }))
  const wanted = params.cwd ? sessions.filter((info) => info.cwd === params.cwd) : sessions
  const page = wanted.slice(offset, offset + PAGE)
  const next = offset + PAGE
  return next < wanted.length ? { sessions: page, nextCursor: String(next) } : { sessions: page }
}
