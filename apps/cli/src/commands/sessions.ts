// `dsh sessions ls|show|export|fork`: the durable sessions, read through ctx.sessionQuery and
// ctx.sessions of the booted profile (never by parsing files here).
import { readFile } from 'node:fs/promises'
import { pointLine, type RewindMode } from '@dsh/interaction/rewind'
import { HarnessError } from '@dsh/kernel'
import { checkSessionId, sessionUsage, usageCostText } from '@dsh/session'
import { isConversationMessage, leaseSession, resolveSessionId, type SessionSummary } from '@dsh/session/store'
import type {} from '@dsh/session/store/query'
import { alignColumns, exportLines, removeSessions, renderTranscript, SessionHost } from '@dsh/surfaces/host'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { printable, printableLines } from '../printable.js'
import { type RuntimeScope, withRuntime } from '../runtime.js'

type Runtime = RuntimeScope['runtime']

function query(runtime: Runtime) {
  const service = runtime.root.get('sessionQuery')
  if (!service)
    throw new HarnessError('CONFIG_NO_QUERY', 'the profile has no session-query row; enable it to list sessions', {})
  return service
}

/** The full id of the session named by an id or a unique prefix of one (as git takes commit ids). */
function fullId(runtime: Runtime, id: string): Promise<string> {
  return resolveSessionId(runtime.root.sessionStore, id)
}

function when(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 16)
}

export async function sessionsList(request: ComposeRequest, options: { json?: boolean }, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const summaries: SessionSummary[] = await query(runtime).list()
    if (options.json) {
      io.out(JSON.stringify(summaries, null, 2))
      return ExitCode.OK
    }
    if (summaries.length === 0) {
      io.err('dsh: no sessions yet; start one with dsh run "<task>"')
      return ExitCode.OK
    }
    const rows = [['ID', 'TITLE', 'CWD', 'UPDATED', 'MESSAGES', 'COST']]
    for (const s of summaries) {
      // A store that does not keep the count or the cost (SQLite, PostgreSQL): fold them from the log itself.
      const log =
        (s.messageCount === undefined || s.cost === undefined) && !s.error
          ? await query(runtime)
              .read(s.id)
              .catch(() => undefined)
          : undefined
      const messages = s.messageCount ?? log?.events.filter(isConversationMessage).length
      const cost = s.cost ?? (log ? sessionUsage(log.events, log.header.seedLength ?? 0) : undefined)
      const title = printable(s.title ?? '')
      rows.push([
        s.id,
        title.length > 40 ? `${title.slice(0, 37)}...` : title,
        printable(s.cwd),
        when(s.updatedAt),
        messages === undefined ? '?' : String(messages),
        cost === undefined ? '?' : cost.requests === 0 ? '-' : usageCostText(cost),
      ])
    }
    for (const line of alignColumns(rows)) io.out(line)
    return ExitCode.OK
  })
}

export async function sessionsShow(request: ComposeRequest, id: string, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const session = await query(runtime).read(await fullId(runtime, id))
    // Everything printed comes from the log (a prompt, the model's text, a tool's output, a cwd): as
    // in `ls`, escape sequences and control characters go before they reach the terminal.
    io.out(
      `session ${printable(session.id)}  cwd ${printable(session.header.cwd)}  created ${when(session.header.createdAt)}`,
    )
    if (session.header.parentSession)
      io.out(`forked from ${printable(session.header.parentSession)} after ${session.header.seedLength} events`)
    for (const line of renderTranscript(session.events, 'text')) io.out(printableLines(line))
    return ExitCode.OK
  })
}

export async function sessionsExport(
  request: ComposeRequest,
  id: string,
  options: { format: 'md' | 'jsonl' | 'html' | 'bundle'; toolOutput?: boolean },
  io: Io,
): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    id = await fullId(runtime, id)
    const store = runtime.root.sessionStore
    if (options.format === 'html') {
      const { embeddedChildren, embeddedImages, sessionHtml } = await import('@dsh/surfaces/web/html-export')
      const session = await query(runtime).read(id)
      const attachments = runtime.root.get('attachments')
      const images = await embeddedImages(session, async (ref) => attachments?.get(ref))
      const children = await embeddedChildren(session, (child) => query(runtime).read(child))
      io.out(sessionHtml(session, { dropToolOutput: options.toolOutput === false, images, children }))
    } else if (options.format === 'bundle') {
      const { sessionsExportBundle } = await import('./session-bundle.js')
      await sessionsExportBundle(runtime, id, io)
    } else if (options.format === 'jsonl' && store.kind === 'jsonl') {
      // The stored lines as they are, checksums and hash chain included: `dsh sessions verify FILE`
      // checks the copy anywhere, and a signature of the session covers it.
      for (const line of (await readFile(store.locate(id), 'utf8')).split('\n')) if (line) io.out(line)
    } else {
      for (const line of exportLines(await query(runtime).read(id), options.format)) io.out(line)
    }
    return ExitCode.OK
  })
}

export async function sessionsFork(
  request: ComposeRequest,
  id: string,
  options: { at?: number },
  io: Io,
): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    id = await fullId(runtime, id)
    const source = await query(runtime).read(id)
    const child = runtime.root.sessions.fork(source, options.at)
    const durable = await runtime.root.sessions.flush(child)
    if (!durable)
      throw new HarnessError(
        'CONFIG_NO_PERSISTENCE',
        'no session persistence row is active; the fork was not saved',
        {},
      )
    io.out(child.id)
    io.err(
      `dsh: forked ${id} after event ${child.header.seedLength !== undefined ? child.header.seedLength - 1 : '?'}; continue it with: dsh run --resume ${child.id} "<message>"`,
    )
    return ExitCode.OK
  })
}

/** `dsh sessions rewind ID`: the messages a rewind can go back to, each with what its turn changed. */
export async function sessionsRewind(
  request: ComposeRequest,
  id: string,
  options: { to?: number; mode?: RewindMode; overwrite?: boolean; json?: boolean; step?: 'undo' | 'redo' },
  io: Io,
): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    id = await fullId(runtime, id)
    const host = new SessionHost(runtime.root, {
      name: 'dsh sessions rewind',
      closeReason: 'the rewind ended',
      answerApprovals: false,
      answerQuestions: false,
      log: (line) => io.err(`dsh: ${line}`),
    })
    try {
      if (options.step) {
        // /undo and /redo exactly as the chat runs them, through the session's commands.
        await host.resume(id)
        const outcome = await host.command(id, `/${options.step}${options.overwrite ? ' overwrite' : ''}`)
        if (options.json) io.out(JSON.stringify(outcome.data ?? outcome, null, 2))
        else io.err(`dsh: ${printable(outcome.text)}`)
        const data = outcome.data
        const code = data && typeof data === 'object' && !Array.isArray(data) ? data.code : undefined
        return code === 'REWIND_CONFLICT' ? ExitCode.REWIND_CONFLICT : outcome.ok ? ExitCode.OK : ExitCode.ERROR
      }
      if (options.to === undefined) {
        const points = await host.rewindPoints(id)
        if (options.json) io.out(JSON.stringify(points, null, 2))
        else if (points.length === 0) io.err(`dsh: session ${id} has no message to rewind to yet`)
        else {
          for (const point of points) io.out(printable(pointLine(point)))
          io.err(`dsh: rewind with: dsh sessions rewind ${id.slice(0, 8)} --to N [--files|--conversation|--both]`)
        }
        return ExitCode.OK
      }
      await host.resume(id)
      const result = await host.rewind(id, {
        point: options.to,
        mode: options.mode ?? 'both',
        ...(options.overwrite ? { overwrite: true } : {}),
      })
      if (options.json) io.out(JSON.stringify(result, null, 2))
      const files = result.files
      if (files && !options.json) io.err(`dsh: ${printable(files.text)}`)
      if (files?.code === 'REWIND_CONFLICT') {
        for (const path of files.conflicts) io.err(`  changed since: ${printable(path)}`)
        return ExitCode.REWIND_CONFLICT
      }
      if (result.previousSessionId && !options.json) {
        io.out(result.sessionId)
        io.err(
          `dsh: the conversation before message ${result.point} is session ${result.sessionId} (${id} is kept); continue it with: dsh --resume ${result.sessionId}`,
        )
      }
      return ExitCode.OK
    } finally {
      await host.close()
    }
  })
}

/**
 * `dsh sessions repair ID`: under the session's lease, keeps the longest readable prefix of a damaged
 * session file and moves the rest, byte for byte, to a side file; the next resume closes the open
 * tail as after a crash. A second process holding the session makes it fail with SESSION_LEASED.
 */
export async function sessionsRepair(request: ComposeRequest, id: string, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const store = runtime.root.get('sessionStore')
    if (!store?.repair) {
      throw new HarnessError(
        'NOT_AVAILABLE',
        `the ${store?.kind ?? 'configured'} session store cannot repair sessions (the JSONL store can)`,
        {},
      )
    }
    // A session too damaged to read still repairs by its full id.
    id = await resolveSessionId(store, id).catch(() => id)
    const lease = await leaseSession(store, checkSessionId(id))
    try {
      const report = await store.repair(id)
      if (!report.sideFile) {
        io.err(`dsh: ${report.location} reads whole (${report.keptLines} lines); nothing to repair`)
        return ExitCode.OK
      }
      io.err(
        `dsh: kept the first ${report.keptLines} lines of ${report.location}; moved the damaged rest (${report.movedBytes} bytes) to ${report.sideFile}. Continue with: dsh run --resume ${id} "<message>"`,
      )
      return ExitCode.OK
    } finally {
      await lease.release()
    }
  })
}

/** `dsh sessions rm ID...`: deletes each under its lease, then the blobs no remaining session uses. */
export async function sessionsRemove(request: ComposeRequest, ids: string[], io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const full: string[] = []
    for (const id of ids) full.push(await fullId(runtime, id))
    const report = await removeSessions(runtime.root, full)
    let blobs = ''
    if (report.blobs) {
      blobs = `; removed ${report.blobs.removed} attachment blob(s) no other session uses`
      if (report.blobs.keptYoung > 0)
        blobs += ` (kept ${report.blobs.keptYoung} written in the last minute; rm again later)`
    }
    io.err(`dsh: removed ${report.removed.join(', ')}${blobs}`)
    return ExitCode.OK
  })
}
