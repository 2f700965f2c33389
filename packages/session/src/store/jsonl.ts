// The JSONL provider of `ctx.sessionStore` (the default): `<dir>/<id>.jsonl`, the header on the first
// line and one envelope per line; fdatasync on flush; a torn final line detected on read and cut off
// by repair. A `<id>.meta.json` sidecar (a derived cache, never trusted when stale) lets the session
// list skip reading whole logs.
import { mkdirSync, writeSync } from 'node:fs'
import { type FileHandle, open, readdir, readFile, rename, stat, truncate, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type Context, HarnessError } from '@dsh/kernel'
import { checkSessionId, type SessionEvent } from '../index.js'
import { sessionUsage } from '../usage.js'
import { BackedStore } from './backed-store.js'
import { verifyLines } from './chain.js'
import {
  type ChainVerdict,
  isConversationMessage,
  type SessionCost,
  type SessionRepair,
  type SessionStore,
  type SessionSummary,
  type StoredSession,
  sessionExists,
  sessionsDir,
  titleOf,
  type WriteBatch,
  writtenTitleOf,
} from './index.js'
import { chainLine, openLine } from './line-seal.js'
import { addSpend, requestModelAfter } from './sums.js'

export interface JsonlConfig {
  /** The sessions directory; empty means `$DSH_HOME/sessions`. */
  dir?: string
}

/** How many sessions `summaries` reads at once. */
const SUMMARY_READS = 16

interface Meta {
  id: string
  cwd: string
  createdAt: number
  parentSession?: string
  title?: string
  eventCount: number
  /** Conversation messages (`isConversationMessage`); absent from a meta written before it was kept. */
  messageCount?: number
  /** Cost of its requests (`SessionSummary.cost`); absent from a meta written before it was kept. */
  cost?: SessionCost
  /** The fork seed's length: requests below it were the parent's. */
  seedLength?: number
  /** `provider:model` of the last request header: the model the next answer's cost belongs to. */
  requestModel?: string
  /** The hash chain's last hash: the next line chains to it (and a listing can tell a cut tail). */
  lastHash?: string
  updatedAt: number
  /** The log's size when this meta was written; a different size means the meta is stale. */
  bytes: number
}

interface OpenFile {
  handle: FileHandle
  /** Bytes of complete, successfully written lines. */
  size: number
  /** A write failed part-way: truncate to `size` before the next one. */
  dirtyTail: boolean
  /** The directory entry of a new file still needs an fsync. */
  newFile: boolean
  meta: Meta
  /** When the meta sidecar was last written (it is refreshed at most once a second, and on release). */
  metaWrittenAt: number
}

const NEWLINE = 0x0a

function corrupt(location: string, message: string, facts: Record<string, unknown> = {}): HarnessError {
  return new HarnessError('SESSION_CORRUPT', `${location}: ${message}`, { file: location, ...facts })
}

function shrunk(location: string, size: number, recorded: number): HarnessError {
  return corrupt(
    location,
    `the log has ${size} bytes but held ${recorded} when last saved: lines at its end were removed`,
    {
      bytes: size,
      recordedBytes: recorded,
    },
  )
}

/** Splits a session file into its complete lines and the bytes after the last newline. */
export function parseJsonl(buffer: Buffer, location: string): StoredSession {
  const records: unknown[] = []
  let header: unknown
  let position = 0
  let line = 0
  let sealedSeen = false
  let lastHash: string | undefined
  while (position < buffer.length) {
    const end = buffer.indexOf(NEWLINE, position)
    if (end < 0) break
    const opened = openLine(buffer, position, end)
    if ('mismatch' in opened) {
      throw corrupt(location, `line ${line + 1} was changed after it was written (${opened.mismatch})`, {
        line: line + 1,
      })
    }
    // Lines written before checksums existed may precede sealed ones (an old session resumed), never follow.
    if (opened.sealed) sealedSeen = true
    else if (sealedSeen) {
      throw corrupt(location, `line ${line + 1} lost its checksum (a changed byte, or a line inserted by hand)`, {
        line: line + 1,
      })
    }
    if (opened.hash) lastHash = opened.hash
    let value: unknown
    try {
      value = JSON.parse(opened.body)
    } catch (error) {
      throw corrupt(location, `line ${line + 1} is not JSON (${(error as Error).message})`, { line: line + 1 })
    }
    if (line === 0) header = value
    else records.push(value)
    position = end + 1
    line++
  }
  const stored: StoredSession = { header, records, location, ...(lastHash ? { lastHash } : {}) }
  if (position < buffer.length) {
    // A torn write is a strict prefix of one `{...}\n` line. If all but its last byte is complete JSON,
    // the line was whole and only its newline was damaged: that is corruption, not a torn write.
    const tail = buffer.toString('utf8', position, buffer.length - 1)
    let whole = false
    try {
      JSON.parse(tail)
      whole = true
    } catch {}
    if (whole) throw corrupt(location, `the last line (${line + 1}) lost its newline`, { line: line + 1 })
    stored.torn = { bytes: buffer.length - position, reason: `line ${line + 1} was cut off by an interrupted write` }
  }
  return stored
}

/**
 * The longest prefix of `buffer` that reads as a session: whole lines whose seal (when present)
 * matches, that are JSON objects, the header first and envelopes with dense `seq` after it.
 */
export function goodPrefix(buffer: Buffer): { bytes: number; lines: number } {
  let position = 0
  let lines = 0
  let sealedSeen = false
  while (position < buffer.length) {
    const end = buffer.indexOf(NEWLINE, position)
    if (end < 0) break
    const opened = openLine(buffer, position, end)
    if ('mismatch' in opened || (sealedSeen && !opened.sealed)) break
    sealedSeen ||= opened.sealed
    let value: { type?: unknown; seq?: unknown } | undefined
    try {
      value = JSON.parse(opened.body)
    } catch {
      break
    }
    if (typeof value !== 'object' || value === null) break
    if (lines === 0 ? value.type !== 'session' : value.seq !== lines - 1) break
    position = end + 1
    lines++
  }
  return { bytes: position, lines }
}

/** The JSONL backend; a plain class so the Service below can hold it (Cordis proxies services). */
export class JsonlBackend implements SessionStore {
  readonly kind = 'jsonl'
  readonly leaseDir: string
  readonly #files = new Map<string, OpenFile>()
  /** What the last `read` of each session found, so opening it for append need not parse it again. */
  readonly #lastRead = new Map<string, Meta>()

  constructor(readonly dir: string) {
    this.leaseDir = dir
    // Session logs hold everything the model saw: the directory and each file are the user's alone.
    mkdirSync(dir, { recursive: true, mode: 0o700 })
  }

  locate(id: string): string {
    return join(this.dir, `${checkSessionId(id)}.jsonl`)
  }

  async read(id: string): Promise<StoredSession | undefined> {
    const location = this.locate(id)
    let buffer: Buffer
    try {
      buffer = await readFile(location)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
    const stored = parseJsonl(buffer, location)
    if (!stored.torn) await this.#checkLength(id, location, buffer.length)
    if (stored.header && !stored.torn) this.#lastRead.set(id, metaOf(id, stored, buffer.length))
    else this.#lastRead.delete(id)
    return stored
  }

  /**
   * A log shorter than the size its meta sidecar recorded after a sync lost lines at its end (a crash
   * cannot shrink synced data; a torn tail only adds bytes): SESSION_CORRUPT.
   */
  async #checkLength(id: string, location: string, size: number): Promise<void> {
    if (this.#files.has(id)) return
    let meta: Meta | undefined
    try {
      meta = JSON.parse(await readFile(this.#metaPath(id), 'utf8')) as Meta
    } catch {
      return
    }
    if (typeof meta?.bytes === 'number' && meta.bytes > size) throw shrunk(location, size, meta.bytes)
  }

  #metaPath(id: string): string {
    return join(this.dir, `${id}.meta.json`)
  }

  async repairTail(id: string, stored: StoredSession): Promise<void> {
    if (!stored.torn) return
    await this.release(id)
    const location = this.locate(id)
    const size = (await stat(location)).size
    await truncateSynced(location, size - stored.torn.bytes)
  }

  async verify(id: string): Promise<ChainVerdict> {
    checkSessionId(id)
    const location = this.locate(id)
    const buffer = await readFile(location).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') throw new HarnessError('SESSION_NOT_FOUND', `no session ${id} (${location})`, { id })
      throw error
    })
    let recorded: number | undefined
    try {
      const meta = JSON.parse(await readFile(this.#metaPath(id), 'utf8')) as Meta
      if (typeof meta.eventCount === 'number' && meta.bytes >= buffer.length) recorded = meta.eventCount
    } catch {}
    return verifyLines(buffer, recorded)
  }

  async repair(id: string): Promise<SessionRepair> {
    await this.release(id)
    const location = this.locate(id)
    const buffer = await readFile(location)
    const good = goodPrefix(buffer)
    if (good.lines === 0) {
      throw corrupt(location, 'has no readable session header to keep; nothing can be repaired', { id })
    }
    const moved = buffer.subarray(good.bytes)
    let sideFile: string | undefined
    if (moved.length > 0) {
      sideFile = `${location}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`
      const handle = await open(sideFile, 'wx', 0o600)
      try {
        await handle.writeFile(moved)
        await handle.sync()
      } finally {
        await handle.close()
      }
      await truncateSynced(location, good.bytes)
    }
    // The sidecar recorded the damaged length; it is a cache and is rebuilt on the next listing.
    await unlink(this.#metaPath(id)).catch(() => {})
    return { location, keptLines: good.lines, movedBytes: moved.length, ...(sideFile ? { sideFile } : {}) }
  }

  async write(id: string, batch: WriteBatch): Promise<void> {
    const file = this.#files.get(id) ?? (await this.#open(id, batch))
    const lines: string[] = []
    let previous = file.meta.lastHash
    for (const value of batch.header ? [batch.header, ...batch.events] : batch.events) {
      const chained = chainLine(value, previous)
      lines.push(chained.line)
      previous = chained.hash
    }
    if (file.dirtyTail) {
      await file.handle.truncate(file.size)
      file.dirtyTail = false
    }
    if (lines.length > 0) {
      const bytes = Buffer.from(`${lines.join('\n')}\n`)
      try {
        // A synchronous write: it only reaches the page cache (durability is the datasync below), and
        // costs a tenth of the CPU of a thread-pool round trip per batch, which the loop pays per step.
        let done = 0
        while (done < bytes.length) {
          done += writeSync(file.handle.fd, bytes, done, bytes.length - done, file.size + done)
        }
      } catch (error) {
        file.dirtyTail = true
        throw error
      }
      file.size += bytes.length
      if (previous) file.meta.lastHash = previous
      this.#account(file.meta, batch.events)
    }
    if (batch.sync) {
      await file.handle.datasync()
      if (file.newFile) {
        await syncDir(this.dir)
        file.newFile = false
      }
      if (Date.now() - file.metaWrittenAt >= 1000) await this.#syncMeta(file)
    }
  }

  #account(meta: Meta, events: readonly SessionEvent[]): void {
    for (const event of events) {
      const written = writtenTitleOf(event)
      if (written) meta.title = written
      else meta.title ??= titleOf(event)
      meta.updatedAt = event.time
      // A meta from before the count was kept stays without it: `summaries` recounts from the log.
      if (meta.messageCount !== undefined && isConversationMessage(event)) meta.messageCount++
      if (meta.cost !== undefined && event.seq >= (meta.seedLength ?? 0)) addSpend(meta.cost, event, meta.requestModel)
      meta.requestModel = requestModelAfter(event, meta.requestModel)
    }
    meta.eventCount += events.length
  }

  async #open(id: string, batch: WriteBatch): Promise<OpenFile> {
    const location = this.locate(id)
    if (batch.header) {
      let handle: FileHandle
      try {
        handle = await open(location, 'wx', 0o600)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
        // A file without one complete line never held a durable header: reuse it.
        const existing = await readFile(location)
        if (existing.includes(NEWLINE)) {
          throw sessionExists(id, location)
        }
        handle = await open(location, 'w', 0o600)
      }
      const { header } = batch
      const meta: Meta = {
        id,
        cwd: header.cwd,
        createdAt: header.createdAt,
        ...(header.parentSession ? { parentSession: header.parentSession } : {}),
        eventCount: 0,
        messageCount: 0,
        cost: { usd: 0, requests: 0, unknownRequests: 0, models: {} },
        ...(header.seedLength ? { seedLength: header.seedLength } : {}),
        updatedAt: header.createdAt,
        bytes: 0,
      }
      const file: OpenFile = { handle, size: 0, dirtyTail: false, newFile: true, meta, metaWrittenAt: 0 }
      this.#files.set(id, file)
      return file
    }
    const handle = await open(location, 'r+')
    const known = this.#lastRead.get(id)
    this.#lastRead.delete(id)
    if (known && known.bytes === (await handle.stat()).size) {
      const file: OpenFile = {
        handle,
        size: known.bytes,
        dirtyTail: false,
        newFile: false,
        meta: known,
        metaWrittenAt: 0,
      }
      this.#files.set(id, file)
      return file
    }
    try {
      const buffer = await handle.readFile()
      const stored = parseJsonl(buffer, location)
      if (stored.torn) throw corrupt(location, 'has a torn tail; resume the session to repair it')
      const meta = metaOf(id, stored, buffer.length)
      const file: OpenFile = { handle, size: buffer.length, dirtyTail: false, newFile: false, meta, metaWrittenAt: 0 }
      this.#files.set(id, file)
      return file
    } catch (error) {
      await handle.close()
      throw error
    }
  }

  async #syncMeta(file: OpenFile): Promise<void> {
    file.meta.bytes = file.size
    file.metaWrittenAt = Date.now()
    await this.#writeMeta(file.meta).catch(() => {})
  }

  async #writeMeta(meta: Meta): Promise<void> {
    const path = this.#metaPath(meta.id)
    const temp = `${path}.${process.pid}.tmp`
    await writeFile(temp, JSON.stringify(meta))
    await rename(temp, path)
  }

  async summaries(): Promise<SessionSummary[]> {
    const names = (await readdir(this.dir)).filter((name) => name.endsWith('.jsonl'))
    const out: SessionSummary[] = []
    // Many small reads: a few at a time in flight instead of one after another (1,000 sessions).
    let next = 0
    const worker = async () => {
      while (next < names.length) {
        const summary = await this.#summary(names[next++] as string)
        if (summary) out.push(summary)
      }
    }
    await Promise.all(Array.from({ length: Math.min(SUMMARY_READS, names.length) }, worker))
    return out.sort((a, b) => b.updatedAt - a.updatedAt || a.id.localeCompare(b.id))
  }

  /** One session's list row: its meta sidecar when current, else a read of its log (and a new sidecar). */
  async #summary(name: string): Promise<SessionSummary | undefined> {
    const id = name.slice(0, -'.jsonl'.length)
    const location = join(this.dir, name)
    let mtime = 0
    try {
      const info = await stat(location)
      const size = info.size
      mtime = info.mtimeMs
      let meta: Meta | undefined
      try {
        meta = JSON.parse(await readFile(join(this.dir, `${id}.meta.json`), 'utf8')) as Meta
      } catch {}
      if (
        meta?.bytes !== size ||
        meta.messageCount === undefined ||
        meta.cost === undefined ||
        (meta.cost.requests > 0 && meta.cost.models === undefined)
      ) {
        const buffer = await readFile(location)
        const stored = parseJsonl(buffer, location)
        if (meta !== undefined && meta.bytes > size && !stored.torn) throw shrunk(location, size, meta.bytes)
        if (!stored.header) return undefined
        meta = metaOf(id, stored, buffer.length)
        await this.#writeMeta(meta).catch(() => {})
      }
      const { bytes: _bytes, seedLength: _seed, requestModel: _model, lastHash: _hash, ...summary } = meta
      return { ...summary, location }
    } catch (error) {
      const code = (error as { code?: unknown }).code
      const reason = `${typeof code === 'string' ? `${code}: ` : ''}${(error as Error).message}`
      return { id, cwd: '', createdAt: 0, updatedAt: mtime, eventCount: 0, location, error: reason }
    }
  }

  async remove(id: string): Promise<boolean> {
    await this.release(id)
    this.#lastRead.delete(id)
    const location = this.locate(id)
    const existed = await unlink(location).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return false
        throw error
      },
    )
    await unlink(this.#metaPath(id)).catch(() => {})
    return existed
  }

  async release(id: string): Promise<void> {
    const file = this.#files.get(id)
    if (!file) return
    this.#files.delete(id)
    if (!file.dirtyTail) await this.#syncMeta(file)
    await file.handle.close()
  }

  async releaseAll(): Promise<void> {
    await Promise.all([...this.#files.keys()].map((id) => this.release(id)))
  }
}

/** The `time` of a raw record, when it has one (records are not validated here). */
function timeOf(record: unknown): unknown {
  return typeof record === 'object' && record !== null && 'time' in record ? record.time : undefined
}

function costOf(records: readonly unknown[], seedLength: number | undefined): SessionCost {
  const usage = sessionUsage(records, seedLength ?? 0)
  const models = Object.fromEntries(
    usage.models.map((model) => [
      model.model,
      { usd: model.usd, requests: model.requests, unknownRequests: model.unknownRequests },
    ]),
  )
  return { usd: usage.usd, requests: usage.requests, unknownRequests: usage.unknownRequests, models }
}

/** `provider:model` of the last request header among raw records, if any. */
function lastRequestModel(records: readonly unknown[]): string | undefined {
  for (let index = records.length - 1; index >= 0; index--) {
    const record = records[index] as { type?: unknown; data?: { config?: { provider?: unknown; model?: unknown } } }
    if (record?.type !== 'request/header') continue
    const config = record.data?.config
    return `${String(config?.provider ?? 'unknown')}:${String(config?.model ?? 'unknown')}`
  }
  return undefined
}

function metaOf(id: string, stored: StoredSession, bytes: number): Meta {
  const header = stored.header as { cwd?: string; createdAt?: number; parentSession?: string; seedLength?: number }
  let title: string | undefined
  const requestModel = lastRequestModel(stored.records)
  for (const record of stored.records) {
    title = writtenTitleOf(record) ?? (title === undefined ? titleOf(record) : title)
  }
  return {
    id,
    cwd: String(header.cwd ?? ''),
    createdAt: Number(header.createdAt ?? 0),
    ...(header.parentSession ? { parentSession: header.parentSession } : {}),
    ...(title ? { title } : {}),
    eventCount: stored.records.length,
    messageCount: stored.records.filter(isConversationMessage).length,
    cost: costOf(stored.records, header.seedLength),
    ...(header.seedLength ? { seedLength: header.seedLength } : {}),
    ...(requestModel ? { requestModel } : {}),
    ...(stored.lastHash ? { lastHash: stored.lastHash } : {}),
    updatedAt: Number(timeOf(stored.records.at(-1)) ?? header.createdAt ?? 0),
    bytes,
  }
}

async function truncateSynced(location: string, size: number): Promise<void> {
  await truncate(location, size)
  const handle = await open(location, 'r+')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } catch {
    // Some filesystems refuse fsync on a directory; the file's own data is synced regardless.
  } finally {
    await handle.close()
  }
}

/** `ctx.sessionStore` backed by JSONL files (row `session-store`, module `@dsh/session/store/jsonl`). */
export class JsonlSessionStore extends BackedStore {
  static readonly provide = 'sessionStore'
  readonly backend: JsonlBackend
  readonly kind = 'jsonl'
  readonly leaseDir: string

  constructor(ctx: Context, config: JsonlConfig = {}) {
    super(ctx)
    this.backend = new JsonlBackend(sessionsDir(ctx, config?.dir))
    this.leaseDir = this.backend.leaseDir
    ctx.effect(() => () => this.backend.releaseAll(), 'jsonl.close')
  }

  repair(id: string): Promise<SessionRepair> {
    return this.backend.repair(id)
  }

  verify(id: string): Promise<ChainVerdict> {
    return this.backend.verify(id)
  }
}

export default JsonlSessionStore
