// `ctx.sessionQuery`: the read side of durable sessions. `list()` reads summaries the store keeps
// (never whole logs); `read(id)` is a validated detached copy; `search()` is an opt-in SQLite FTS5
// index built from the logs, a derived read model that `rebuildIndex()` drops and rebuilds.
import { join, resolve } from 'node:path'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type { Session, SessionEvent } from '../index.js'
import { type SearchHit, type SessionSummary, sessionsDir, textOf } from './index.js'
import { openSqlite, type SqliteDatabase } from './sqlite-driver.js'

declare module 'cordis' {
  interface Context {
    sessionQuery: SessionQueryService
  }
}

export interface QueryConfig {
  /** Full-text search: off unless given. `path` is the index file (default `<sessions dir>/search.sqlite`). */
  search?: { path?: string } | false
}

export type { SearchHit }

const INDEX_SCHEMA = `
CREATE TABLE IF NOT EXISTS indexed (session_id TEXT PRIMARY KEY, event_count INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(text, session_id UNINDEXED, seq UNINDEXED, type UNINDEXED);
`

/** Turns user text into an FTS5 query of quoted terms (all must match), so no input is a syntax error. */
export function ftsQuery(text: string): string {
  const terms = text.match(/[\p{L}\p{N}_]+/gu) ?? []
  return terms.map((term) => `"${term}"`).join(' ')
}

/** The FTS5 index; a plain class (Cordis proxies services). */
export class SearchIndex {
  readonly #db: SqliteDatabase

  constructor(readonly path: string) {
    this.#db = openSqlite(path, 'session search')
    this.#db.exec('PRAGMA journal_mode = WAL')
    this.#db.exec(INDEX_SCHEMA)
  }

  /** Indexes what the logs gained since the last refresh. */
  async refresh(summaries: SessionSummary[], read: (id: string) => Promise<readonly SessionEvent[]>): Promise<number> {
    const db = this.#db
    const known = new Map(
      (
        db.prepare('SELECT session_id, event_count FROM indexed').all() as { session_id: string; event_count: number }[]
      ).map((row) => [row.session_id, row.event_count]),
    )
    // A deleted session leaves the index with it.
    const present = new Set(summaries.map((summary) => summary.id))
    for (const id of known.keys()) {
      if (present.has(id)) continue
      db.prepare('DELETE FROM docs WHERE session_id = ?').run(id)
      db.prepare('DELETE FROM indexed WHERE session_id = ?').run(id)
    }
    let added = 0
    for (const summary of summaries) {
      const done = known.get(summary.id) ?? 0
      if (done === summary.eventCount) continue
      const events = await read(summary.id)
      const from = done > events.length ? 0 : done
      const insert = db.prepare('INSERT INTO docs (text, session_id, seq, type) VALUES (?, ?, ?, ?)')
      db.transaction(() => {
        if (from === 0) db.prepare('DELETE FROM docs WHERE session_id = ?').run(summary.id)
        for (const event of events.slice(from)) {
          const text = textOf(event)
          if (text) {
            insert.run(text, summary.id, event.seq, event.type)
            added++
          }
        }
        db.prepare('INSERT OR REPLACE INTO indexed (session_id, event_count) VALUES (?, ?)').run(
          summary.id,
          events.length,
        )
      })
    }
    return added
  }

  search(text: string, limit: number): SearchHit[] {
    const query = ftsQuery(text)
    if (!query) return []
    const rows = this.#db
      .prepare(
        `SELECT session_id, seq, type, snippet(docs, 0, '[', ']', '…', 12) AS snippet
         FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?`,
      )
      .all(query, limit) as { session_id: string; seq: number; type: string; snippet: string }[]
    return rows.map((row) => ({ sessionId: row.session_id, seq: row.seq, type: row.type, snippet: row.snippet }))
  }

  drop(): void {
    this.#db.exec('DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS indexed;')
    this.#db.exec(INDEX_SCHEMA)
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close()
  }
}

/** Row `session-query`, module `@dsh/session/store/query`. */
export class SessionQueryService extends Service {
  static readonly provide = 'sessionQuery'
  static readonly inject = ['sessions', 'sessionStore']
  readonly home: Context
  /** Where the full-text index lives; undefined when search is off. */
  readonly indexPath: string | undefined
  private opened: SearchIndex | undefined

  constructor(ctx: Context, config: QueryConfig = {}) {
    super(ctx, 'sessionQuery')
    this.home = ctx
    const search = config?.search
    if (search) {
      const dir = ctx.sessionStore.leaseDir || sessionsDir(ctx, undefined)
      this.indexPath = resolve(search.path || join(dir, 'search.sqlite'))
      ctx.effect(() => () => this.opened?.close(), 'sessionQuery.index')
    }
  }

  /** The index, opened on first use (a run that never searches never loads SQLite); undefined when off. */
  get index(): SearchIndex | undefined {
    if (this.indexPath === undefined) return undefined
    this.opened ??= new SearchIndex(this.indexPath)
    return this.opened
  }

  /** Every durable session, most recently updated first. */
  list(): Promise<SessionSummary[]> {
    return this.home.sessionStore.summaries()
  }

  /** A validated, detached copy of a durable session (no lease, no repair). Throws SESSION_NOT_FOUND. */
  async read(id: string): Promise<Session> {
    const store = this.home.sessionStore
    const stored = await store.read(id)
    if (!stored?.header) {
      throw new HarnessError('SESSION_NOT_FOUND', `no durable session ${id} at ${store.locate(id)}`, { id })
    }
    return this.home.sessions.build(stored.header, stored.records, stored.location, id)
  }

  /**
   * Full-text search over model-visible text: the store's own index when it keeps one (PostgreSQL),
   * else the SQLite index, refreshed from the logs first. Throws SESSION_SEARCH_DISABLED when the row
   * has no `search` config, SESSION_SEARCH_LIMIT_INVALID for a `limit` below 1 or not whole.
   */
  async search(text: string, options: { limit?: number } = {}): Promise<SearchHit[]> {
    const limit = options.limit ?? 20
    // Checked here, the one way to every store: SQLite reads `LIMIT -1` as no limit at all.
    if (!Number.isInteger(limit) || limit < 1) {
      throw new HarnessError(
        'SESSION_SEARCH_LIMIT_INVALID',
        `search limit must be a whole number of at least 1, got ${limit}; leave it out for 20`,
        { limit },
      )
    }
    const store = this.home.sessionStore
    if (store.search) return store.search(this.enabled(text), limit)
    const index = this.requireIndex()
    await this.refreshIndex()
    return index.search(text, limit)
  }

  /** Brings the index up to date with the logs; returns how many documents were added. */
  async refreshIndex(): Promise<number> {
    // A store that indexes in its own write transactions is never behind.
    if (this.home.sessionStore.search) return this.enabled(0)
    const index = this.requireIndex()
    return index.refresh(await this.list(), async (id) => (await this.read(id)).events as readonly SessionEvent[])
  }

  /** Drops the index and rebuilds it from the logs; returns how many documents it holds. */
  async rebuildIndex(): Promise<number> {
    const store = this.home.sessionStore
    if (store.rebuildSearch) return this.enabled(store).rebuildSearch?.() ?? 0
    this.requireIndex().drop()
    return this.refreshIndex()
  }

  /** The SQLite index, or SESSION_SEARCH_DISABLED. */
  requireIndex(): SearchIndex {
    const index = this.index
    if (!index) throw disabled()
    return index
  }

  /** Passes `value` through when search is on; SESSION_SEARCH_DISABLED otherwise. */
  private enabled<T>(value: T): T {
    if (this.indexPath === undefined) throw disabled()
    return value
  }
}

function disabled(): HarnessError {
  return new HarnessError(
    'SESSION_SEARCH_DISABLED',
    'session search is off; give the session-query row `search: { path: ... }` (or `search: {}`) to build the index',
    {},
  )
}

export default SessionQueryService
