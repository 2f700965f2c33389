// `dsh sessions ls|show|export|fork`: the durable sessions, read through ctx.sessionQuery and
// ctx.sessions of the booted profile (never by parsing files here).
import { HarnessError } from '@dsh/kernel'
import { checkSessionId } from '@dsh/session'
import { acquireLease, type SessionSummary } from '@dsh/session-store'
import type {} from '@dsh/session-store/query'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { type RuntimeScope, withRuntime } from '../runtime.js'
import { renderTranscript } from '../transcript.js'

type Runtime = RuntimeScope['runtime']

function query(runtime: Runtime) {
  const service = runtime.root.get('sessionQuery')
  if (!service)
    throw new HarnessError('CONFIG_NO_QUERY', 'the profile has no session-query row; enable it to list sessions', {})
  return service
}

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? []
  return rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  )
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
    const rows = [['ID', 'TITLE', 'CWD', 'UPDATED', 'EVENTS']]
    for (const s of summaries) {
      const title = (s.title ?? '').replace(/\s+/g, ' ')
      rows.push([
        s.id,
        title.length > 40 ? `${title.slice(0, 37)}...` : title,
        s.cwd,
        when(s.updatedAt),
        String(s.eventCount),
      ])
    }
    for (const line of table(rows)) io.out(line)
    return ExitCode.OK
  })
}

export async function sessionsShow(request: ComposeRequest, id: string, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const session = await query(runtime).read(id)
    io.out(`session ${session.id}  cwd ${session.header.cwd}  created ${when(session.header.createdAt)}`)
    if (session.header.parentSession)
      io.out(`forked from ${session.header.parentSession} after ${session.header.seedLength} events`)
    for (const line of renderTranscript(session.events, 'text')) io.out(line)
    return ExitCode.OK
  })
}

export async function sessionsExport(
  request: ComposeRequest,
  id: string,
  options: { format: 'md' | 'jsonl' },
  io: Io,
): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const session = await query(runtime).read(id)
    if (options.format === 'jsonl') {
      io.out(JSON.stringify(session.header))
      for (const event of session.events) io.out(JSON.stringify(event))
    } else {
      io.out(
        `# Session ${session.id}\n\n- cwd: \`${session.header.cwd}\`\n- created: ${when(session.header.createdAt)}\n`,
      )
      for (const line of renderTranscript(session.events, 'md')) io.out(line)
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
    const lease = acquireLease(store.leaseDir, checkSessionId(id))
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
      lease.release()
    }
  })
}
