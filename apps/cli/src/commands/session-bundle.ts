// `dsh sessions export ID --format bundle` and `dsh sessions import FILE`: a session carried to another
// machine with its attachment blobs and workspace checkpoints, its log as chained lines (decision 480)
// so the importer checks every event before anything is written and names the first one that changed.
//
// Bundle (version 2), one JSON value a line:
//   {"type":"dsh/session-bundle","version":2,"session":ID,"events":N,"lastHash":H,"chain":"stored"|"recomputed"}
//   {"type":"blob","ref":REF,"data":BASE64}                           one per attachment
//   {"type":"checkpoints","cwd":DIR,"snapshots":[ID...],"data":BASE64}  the snapshots the log names
//   the session file itself: its header then each event, each line chained and sealed as the JSONL store writes them
// Version 1 bundles (blobs, then the header and events with no chain) still import, unverified.
import { statSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { refsIn } from '@dsh/attachments'
import type {} from '@dsh/interaction/rewind'
import { HarnessError } from '@dsh/kernel'
import { checkSessionId, isEvent, type SessionEvent, type SessionHeader } from '@dsh/session'
import { chainLine, leaseSession, verifyLines } from '@dsh/session/store'
import type {} from '@dsh/session/store/query'
import type {} from '@dsh/world/snapshots'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import { type Io, readAllText } from '../io.js'
import { type RuntimeScope, withRuntime } from '../runtime.js'

type Runtime = RuntimeScope['runtime']

interface BundleHead {
  type: 'dsh/session-bundle'
  version: 1 | 2
  session: string
  events?: number
  lastHash?: string
  /** `stored`: the chain is the one the store holds (a signature of the session covers the bundle). */
  chain?: 'stored' | 'recomputed'
}

const FROM_EXPORT = 'give a file from `dsh sessions export ID --format bundle`'

/** The snapshot ids the session's checkpoints name, in log order, without repeats. */
function checkpointIds(events: readonly SessionEvent[]): string[] {
  const ids = new Set<string>()
  for (const event of events) if (isEvent(event, 'checkpoint/taken')) ids.add(event.data.snapshot)
  return [...ids]
}

export async function sessionsExportBundle(runtime: Runtime, id: string, io: Io): Promise<void> {
  const query = runtime.root.get('sessionQuery')
  if (!query) throw new HarnessError('CONFIG_NO_QUERY', 'the profile has no session-query row; enable it', {})
  const session = await query.read(id)
  const lines: string[] = []
  let previous: string | undefined
  for (const value of [session.header, ...session.events]) {
    const chained = chainLine(value, previous)
    lines.push(chained.line)
    previous = chained.hash
  }
  // The chain is rebuilt from the events as read; when it ends where the store's does, it is the stored one.
  const stored = await runtime.root.sessionStore.verify?.(id).catch(() => undefined)
  const chain = stored?.ok && stored.lastHash === previous ? 'stored' : 'recomputed'
  const head: BundleHead = {
    type: 'dsh/session-bundle',
    version: 2,
    session: session.id,
    events: session.events.length,
    ...(previous ? { lastHash: previous } : {}),
    chain,
  }
  io.out(JSON.stringify(head))
  const refs = [...refsIn(session.events)]
  const attachments = runtime.root.get('attachments')
  if (refs.length > 0 && !attachments)
    throw new HarnessError(
      'CONFIG_NO_ATTACHMENTS',
      'the session has attachments and the attachments row is disabled',
      {},
    )
  for (const ref of refs) {
    const bytes = await (attachments as NonNullable<typeof attachments>).get(ref)
    io.out(JSON.stringify({ type: 'blob', ref, data: Buffer.from(bytes).toString('base64') }))
  }
  const snapshots = checkpointIds(session.events)
  if (snapshots.length > 0) {
    const store = runtime.root.get('snapshots')
    const data = store?.pack
      ? await store.pack(session.header.cwd, snapshots).catch((error: Error) => error)
      : undefined
    if (data instanceof Buffer)
      io.out(JSON.stringify({ type: 'checkpoints', cwd: session.header.cwd, snapshots, data: data.toString('base64') }))
    else
      io.err(
        `dsh: the bundle carries no workspace checkpoints (${data instanceof Error ? data.message : 'no snapshots row can pack them'}); after import, /rewind can take back the conversation only`,
      )
  }
  for (const line of lines) io.out(line)
  if (chain === 'recomputed')
    io.err(
      `dsh: the store's hash chain of ${id} ${stored ? (stored.ok ? 'covers only part of it' : `does not check (${stored.message})`) : 'is not available'}; the bundle carries a chain computed now`,
    )
}

interface ImportOptions {
  /** Import under this id instead (the bundle's is taken, or a second copy is wanted). */
  as?: string
  /** The workspace the session continues in on this machine (its recorded one does not exist here). */
  cwd?: string
}

function parseRecords(text: string, file: string): { records: Record<string, unknown>[]; lines: string[] } {
  const lines = text.split('\n').filter((line) => line.trim())
  const records = lines.map((line, index) => {
    try {
      return JSON.parse(line) as Record<string, unknown>
    } catch {
      throw new HarnessError('SESSION_NOT_VERIFIED', `${file}: line ${index + 1} is not JSON; ${FROM_EXPORT}`, {})
    }
  })
  return { records, lines }
}

/** The log lines of a version 2 bundle, checked against their chain and the head; throws naming the event. */
function verifiedLog(head: BundleHead, lines: string[], file: string): { header: unknown; events: unknown[] } {
  const verdict = verifyLines(Buffer.from(`${lines.join('\n')}\n`), head.events)
  const refuse = (why: string) =>
    new HarnessError('SESSION_NOT_VERIFIED', `${file}: ${why}; nothing was imported (export it again)`, {
      file,
      ...(verdict.ok ? {} : { seq: verdict.seq, kind: verdict.kind }),
    })
  if (!verdict.ok) throw refuse(verdict.message)
  if (verdict.unchained > 0) throw refuse(`the first ${verdict.unchained} events carry no chain hash`)
  if (verdict.events !== head.events)
    throw refuse(
      `the bundle says ${head.events} events and holds ${verdict.events} (events after ${verdict.events - 1} are missing)`,
    )
  if (verdict.lastHash !== head.lastHash)
    throw refuse('its log does not end with the chain hash its first line recorded (the log was replaced)')
  const values = lines.map((line) => {
    const { hash: _hash, crc: _crc, ...value } = JSON.parse(line) as Record<string, unknown>
    return value
  })
  return { header: values[0], events: values.slice(1) }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/**
 * `dsh sessions import FILE`: the log checked against its chain, then blobs (each checked against its
 * hash) and checkpoints (git checks each object), then the session written whole and synced. An id
 * that exists is refused unless `--as` names another.
 */
export async function sessionsImport(
  request: ComposeRequest,
  file: string,
  options: ImportOptions,
  io: Io,
): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const { records, lines } = parseRecords(
      file === '-' ? await readAllText(io.stdin) : await readFile(file, 'utf8'),
      file,
    )
    const head = records[0] as Partial<BundleHead> | undefined
    if (
      head?.type !== 'dsh/session-bundle' ||
      (head.version !== 1 && head.version !== 2) ||
      typeof head.session !== 'string'
    )
      throw new HarnessError('USAGE', `${file} is not a dsh session bundle; ${FROM_EXPORT}`, {})
    const firstLog = records.findIndex(
      (record, index) => index > 0 && record.type !== 'blob' && record.type !== 'checkpoints',
    )
    if (firstLog < 0) throw new HarnessError('SESSION_NOT_VERIFIED', `${file} holds no session log; ${FROM_EXPORT}`, {})
    const log =
      head.version === 2
        ? verifiedLog(head as BundleHead, lines.slice(firstLog), file)
        : { header: records[firstLog], events: records.slice(firstLog + 1) }
    const original = checkSessionId(head.session)
    const id = checkSessionId(options.as ?? original)
    const store = runtime.root.sessionStore
    if (await store.read(id)) {
      throw new HarnessError(
        'SESSION_EXISTS',
        `session ${id} already exists at ${store.locate(id)}; import it under another id (--as NEW_ID) or remove the old one (dsh sessions rm ${id})`,
        { id },
      )
    }
    const header = { ...(log.header as SessionHeader) }
    if (header.id !== original)
      throw new HarnessError(
        'SESSION_NOT_VERIFIED',
        `${file}: its log is session ${header.id}, its head names ${original}`,
        {},
      )
    header.id = id
    if (options.cwd !== undefined) header.cwd = resolve(options.cwd)
    if (!isDirectory(header.cwd))
      throw new HarnessError(
        'USAGE',
        `the session's workspace ${header.cwd} does not exist on this machine; give --cwd DIR (the same repository checked out here) and it continues there`,
        { cwd: header.cwd },
      )
    // Validated like any stored session before anything is written.
    const session = runtime.root.sessions.build(header, log.events, file, id)
    const blobs = records.filter((record) => record.type === 'blob')
    const attachments = runtime.root.get('attachments')
    if (blobs.length > 0 && !attachments)
      throw new HarnessError(
        'CONFIG_NO_ATTACHMENTS',
        'the bundle has attachments and the attachments row is disabled; enable it',
        {},
      )
    for (const blob of blobs) await attachments?.adopt(String(blob.ref), Buffer.from(String(blob.data), 'base64'))
    const notes: string[] = []
    for (const record of records.filter((r) => r.type === 'checkpoints')) {
      const ids = Array.isArray(record.snapshots) ? record.snapshots.map(String) : []
      const snapshots = runtime.root.get('snapshots')
      if (!snapshots?.unpack) {
        notes.push('no snapshots row here can take the workspace checkpoints: /rewind takes back the conversation only')
        continue
      }
      const held = await snapshots.unpack(header.cwd, Buffer.from(String(record.data), 'base64'), ids)
      notes.push(`${held.length} of ${ids.length} workspace checkpoint(s)`)
    }
    const lease = await leaseSession(store, id)
    try {
      await store.write(id, { header: session.header, events: session.events as SessionEvent[], sync: true })
      await store.release(id)
    } finally {
      await lease.release()
    }
    const written = await store.verify?.(id).catch(() => undefined)
    let chain = head.version === 1 ? 'a version 1 bundle carries no hash chain: not verified' : 'chain verified'
    if (head.version === 2 && written?.ok)
      chain +=
        written.lastHash === head.lastHash
          ? `, stored identical (last hash ${written.lastHash.slice(0, 16)}…)`
          : ' (stored under a new chain: the id or workspace changed)'
    io.out(id)
    io.err(
      `dsh: imported ${id} (${session.events.length} events, ${blobs.length} attachment blob(s)${notes.length ? `, ${notes.join(', ')}` : ''}; ${chain}); continue it with: dsh --resume ${id}`,
    )
    return ExitCode.OK
  })
}
