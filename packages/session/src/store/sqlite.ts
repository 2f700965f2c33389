// The SQLite provider of `ctx.sessionStore`: one database (node:sqlite or better-sqlite3, WAL) holding a row per
// session and per event. Each write is one transaction, so there is no torn tail; a flush commits with
// `synchronous=FULL`. `PRAGMA user_version` is the schema version; a newer database is refused.
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { type Context, HarnessError } from '@dsh/kernel'
import type { SessionEvent } from '../index.js'
import { BackedStore } from './backed-store.js'
import {
  type ChainVerdict,
  type SessionStore,
  type SessionSummary,
  type StoredSession,
  sessionExists,
  sessionsDir,
  titleOf,
  type WriteBatch,
  writtenTitleOf,
} from './index.js'
import { chainHash } from './line-seal.js'
import {
  type ChainRow,
  checkEventCount,
  eventOfRow,
  parseColumn,
  type SessionRow,
  summaryOfRow,
  verifyRows,
} from './rows.js'
import { openSqlite, type SqliteDatabase, type SqliteStatement } from './sqlite-driver.js'
import { addToSums, emptySums, parseSums, type SessionSums } from './sums.js'

/** The schema this build writes; a database with a higher `user_version` is refused. */
export const SQLITE_SCHEMA_VERSION = 2

export interface SqliteConfig {
  /** The database file; empty means `<sessions dir>/sessions.sqlite`. */
  path?: string
  /** The sessions directory (for the default path and lease files); empty means `$DSH_HOME/sessions`. */
  dir?: string
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  header TEXT NOT NULL,
  cwd TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  parent TEXT,
  title TEXT,
  updated_at INTEGER NOT NULL,
  event_count INTEGER NOT NULL DEFAULT 0,
  last_hash TEXT,
  sums TEXT
);
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  body TEXT NOT NULL,
  hash TEXT,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
`

/**
 * Version 2: the hash chain (decision 480) and the session list's running sums; columns added to a
 * version 1 file, its rows left unchained and without sums.
 */
const V2_COLUMNS: Array<[table: string, column: string, type: string]> = [
  ['sessions', 'last_hash', 'TEXT'],
  ['sessions', 'sums', 'TEXT'],
  ['events', 'hash', 'TEXT'],
]

const DAMAGE = new Set(['SQLITE_CORRUPT', 'SQLITE_NOTADB', 'SQLITE_CORRUPT_INDEX', 'SQLITE_CORRUPT_SEQUENCE'])

/** SQLite's "the file is damaged" errors as SESSION_CORRUPT naming the file; other errors unchanged. */
function damaged(path: string, error: unknown): unknown {
  const code = (error as { code?: unknown }).code
  if (typeof code !== 'string' || !DAMAGE.has(code)) return error
  return new HarnessError(
    'SESSION_CORRUPT',
    `${path}: the SQLite database is damaged (${(error as Error).message}); restore it from a backup or move it aside`,
    { file: path, sqlite: code },
    { cause: error },
  )
}

/**
 * At open, after the schema version matched: a plain SQLite error from preparing the store's own statements
 * means the stored schema no longer says what this version wrote (a damaged or hand-edited file).
 */
function schemaDamaged(path: string, error: unknown): unknown {
  const code = (error as { code?: unknown }).code
  if (HarnessError.is(error) || typeof code !== 'string' || !code.startsWith('SQLITE_')) return error
  return new HarnessError(
    'SESSION_CORRUPT',
    `${path}: the SQLite database's schema does not match what dsh wrote (${(error as Error).message}); restore it from a backup or move it aside`,
    { file: path, sqlite: code },
    { cause: error },
  )
}

/** Runs `fn`, turning SQLite damage errors into SESSION_CORRUPT. */
function guarded<T>(path: string, fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    throw damaged(path, error)
  }
}

/** The SQLite backend; a plain class so the Service below can hold it. */
export class SqliteBackend implements SessionStore {
  readonly kind = 'sqlite'
  readonly leaseDir: string
  readonly path: string
  readonly #db: SqliteDatabase
  readonly #insertSession: SqliteStatement
  readonly #insertEvent: SqliteStatement
  readonly #touch: SqliteStatement
  readonly #titleOf: SqliteStatement
  readonly #writeTitle: SqliteStatement
  readonly #setTitle: SqliteStatement
  readonly #lastHashOf: SqliteStatement

  constructor(path: string, leaseDir: string) {
    this.path = resolve(path)
    this.leaseDir = leaseDir
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 })
    mkdirSync(leaseDir, { recursive: true, mode: 0o700 })
    // SQLite creates the file with the umask's mode (and its -wal/-shm files with the file's): made
    // the user's alone before the first write, as the JSONL logs are.
    if (!existsSync(this.path)) closeSync(openSync(this.path, 'a', 0o600))
    const db = guarded(this.path, () => openSqlite(this.path, 'the SQLite session store'))
    try {
      const version = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version
      if (version > SQLITE_SCHEMA_VERSION) {
        throw new HarnessError(
          'SESSION_STORE_SCHEMA_UNSUPPORTED',
          `${this.path}: schema version ${version} is newer than this dsh supports (${SQLITE_SCHEMA_VERSION}); upgrade dsh or point the sqlite store at another file`,
          { path: this.path, version, supported: SQLITE_SCHEMA_VERSION },
        )
      }
      db.exec('PRAGMA journal_mode = WAL')
      db.exec('PRAGMA synchronous = NORMAL')
      db.exec('PRAGMA busy_timeout = 5000')
      if (version < SQLITE_SCHEMA_VERSION) {
        db.exec(SCHEMA)
        for (const [table, column, type] of V2_COLUMNS) {
          const columns = db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>
          if (!columns.some((existing) => existing.name === column))
            db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`)
        }
        db.exec(`PRAGMA user_version = ${SQLITE_SCHEMA_VERSION}`)
      }
      this.#db = db
      this.#insertSession = db.prepare(
        'INSERT INTO sessions (id, header, cwd, created_at, parent, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      this.#insertEvent = db.prepare('INSERT INTO events (session_id, seq, body, hash) VALUES (?, ?, ?, ?)')
      this.#touch = db.prepare(
        'UPDATE sessions SET updated_at = COALESCE(?, updated_at), event_count = event_count + ?, last_hash = ?, sums = ? WHERE id = ?',
      )
      this.#lastHashOf = db.prepare('SELECT last_hash, sums FROM sessions WHERE id = ?')
      this.#titleOf = db.prepare('SELECT title FROM sessions WHERE id = ?')
      this.#setTitle = db.prepare('UPDATE sessions SET title = ? WHERE id = ? AND title IS NULL')
      this.#writeTitle = db.prepare('UPDATE sessions SET title = ? WHERE id = ?')
    } catch (error) {
      db.close()
      throw schemaDamaged(this.path, damaged(this.path, error))
    }
  }

  locate(id: string): string {
    return `${this.path}#${id}`
  }

  async write(id: string, batch: WriteBatch): Promise<void> {
    const db = this.#db
    const run = () => {
      const { header } = batch
      // The chain continues from the session row's last hash; a new session's starts at its header.
      let previous: string | undefined
      let sums: SessionSums | undefined
      if (header) {
        const headerText = JSON.stringify(header)
        previous = chainHash(undefined, headerText)
        sums = emptySums(header.seedLength)
        try {
          this.#insertSession.run(
            id,
            headerText,
            header.cwd,
            header.createdAt,
            header.parentSession ?? null,
            header.createdAt,
          )
        } catch (error) {
          if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
            throw sessionExists(id, this.locate(id))
          throw error
        }
      } else {
        const row = this.#lastHashOf.get(id) as { last_hash: string | null; sums: string | null } | undefined
        previous = row?.last_hash ?? undefined
        sums = parseSums(row?.sums)
      }
      if (sums) addToSums(sums, batch.events)
      let title: string | undefined
      const needTitle = (this.#titleOf.get(id) as { title: string | null } | undefined)?.title == null
      for (const event of batch.events) {
        const body = JSON.stringify(event)
        previous = chainHash(previous, body)
        this.#insertEvent.run(id, event.seq, body, previous)
        if (needTitle) title ??= titleOf(event)
        const written = writtenTitleOf(event)
        if (written) this.#writeTitle.run(written, id)
      }
      const last = batch.events.at(-1) as SessionEvent | undefined
      const touched = this.#touch.run(
        last?.time ?? null,
        batch.events.length,
        previous ?? null,
        sums ? JSON.stringify(sums) : null,
        id,
      )
      if (Number(touched.changes) === 0) {
        throw new HarnessError('SESSION_NOT_FOUND', `session ${id} has no header in ${this.path}`, { id })
      }
      if (title) this.#setTitle.run(title, id)
    }
    if (batch.sync) db.exec('PRAGMA synchronous = FULL')
    try {
      guarded(this.path, () => db.transaction(run, 'immediate'))
    } finally {
      if (batch.sync) db.exec('PRAGMA synchronous = NORMAL')
    }
  }

  async read(id: string): Promise<StoredSession | undefined> {
    return guarded(this.path, () => this.#read(id))
  }

  #read(id: string): StoredSession | undefined {
    const location = this.locate(id)
    const row = this.#db.prepare('SELECT header, event_count FROM sessions WHERE id = ?').get(id) as
      | { header: string; event_count: number }
      | undefined
    if (!row) return undefined
    const records: unknown[] = []
    for (const event of this.#db
      .prepare('SELECT seq, body FROM events WHERE session_id = ? ORDER BY seq')
      .iterate(id)) {
      const { seq, body } = event as { seq: number; body: string }
      records.push(eventOfRow(location, seq, body))
    }
    // A damaged page can end an iteration early without an error.
    checkEventCount(location, records.length, row.event_count, 'the database is damaged')
    return { header: parseColumn(location, row.header, 'the header'), records, location }
  }

  async verify(id: string): Promise<ChainVerdict> {
    return guarded(this.path, () => {
      const row = this.#db.prepare('SELECT header, event_count FROM sessions WHERE id = ?').get(id) as
        | { header: string; event_count: number }
        | undefined
      if (!row) throw new HarnessError('SESSION_NOT_FOUND', `no session ${id} in ${this.path}`, { id })
      const rows = this.#db
        .prepare('SELECT seq, body, hash FROM events WHERE session_id = ? ORDER BY seq')
        .iterate(id) as Iterable<ChainRow>
      return verifyRows(row.header, rows, row.event_count)
    })
  }

  async repairTail(): Promise<void> {}

  async remove(id: string): Promise<boolean> {
    const db = this.#db
    return guarded(this.path, () =>
      db.transaction(() => {
        db.prepare('DELETE FROM events WHERE session_id = ?').run(id)
        return Number(db.prepare('DELETE FROM sessions WHERE id = ?').run(id).changes) > 0
      }),
    )
  }

  async summaries(): Promise<SessionSummary[]> {
    const rows = guarded(
      this.path,
      () => this.#db.prepare('SELECT * FROM sessions ORDER BY updated_at DESC').all() as SessionRow[],
    )
    return rows.map((row) => summaryOfRow(row, this.locate(row.id)))
  }

  async release(): Promise<void> {}

  close(): void {
    if (this.#db.isOpen) this.#db.close()
  }
}

/** `ctx.sessionStore` backed by SQLite (module `@dsh/session/store/sqlite`). */
export class SqliteSessionStore extends BackedStore {
  static readonly provide = 'sessionStore'
  readonly backend: SqliteBackend
  readonly kind = 'sqlite'
  readonly leaseDir: string

  constructor(ctx: Context, config: SqliteConfig = {}) {
    super(ctx)
    const dir = sessionsDir(ctx, config?.dir)
    this.backend = new SqliteBackend(config?.path || join(dir, 'sessions.sqlite'), dir)
    this.leaseDir = this.backend.leaseDir
    ctx.effect(() => () => this.backend.close(), 'sqlite.close')
  }

  verify(id: string): Promise<ChainVerdict> {
    return this.backend.verify(id)
  }
}

export default SqliteSessionStore
