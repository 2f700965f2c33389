// One small SQLite surface over two engines, so installing dsh never compiles anything: Node's own
// `node:sqlite` where the running Node has it (22.13 and later without a flag), else better-sqlite3 12
// when the user installed it (an optional peer: a native addon that builds from source wherever its
// prebuilt binary cannot be fetched). Only what the SQLite store and the search index use. Errors from
// either engine carry SQLite's result code name (`SQLITE_CORRUPT`, `SQLITE_CONSTRAINT_PRIMARYKEY`...)
// in `code`, which is how the stores tell damage and duplicates from other failures.
import { createRequire } from 'node:module'
import { HarnessError } from '@dsh/kernel'
import type BetterSqlite3 from 'better-sqlite3'

export type SqlValue = string | number | bigint | null | Uint8Array

export interface SqliteStatement {
  run(...params: SqlValue[]): { changes: number | bigint }
  get(...params: SqlValue[]): unknown
  all(...params: SqlValue[]): unknown[]
  iterate(...params: SqlValue[]): Iterable<unknown>
}

export interface SqliteDatabase {
  readonly engine: 'node:sqlite' | 'better-sqlite3'
  readonly isOpen: boolean
  exec(sql: string): void
  prepare(sql: string): SqliteStatement
  /** Runs `fn` in one transaction (`BEGIN IMMEDIATE` when asked: the write lock up front), rolled back if it throws. */
  transaction<T>(fn: () => T, mode?: 'deferred' | 'immediate'): T
  close(): void
}

const require = createRequire(import.meta.url)

// SQLite's primary result codes (sqlite3.h), and the extended ones the stores tell apart.
const PRIMARY = [
  'OK',
  'ERROR',
  'INTERNAL',
  'PERM',
  'ABORT',
  'BUSY',
  'LOCKED',
  'NOMEM',
  'READONLY',
  'INTERRUPT',
  'IOERR',
  'CORRUPT',
  'NOTFOUND',
  'FULL',
  'CANTOPEN',
  'PROTOCOL',
  'EMPTY',
  'SCHEMA',
  'TOOBIG',
  'CONSTRAINT',
  'MISMATCH',
  'MISUSE',
  'NOLFS',
  'AUTH',
  'FORMAT',
  'RANGE',
  'NOTADB',
]
const EXTENDED = new Map<number, string>([
  [267, 'CORRUPT_VTAB'],
  [523, 'CORRUPT_SEQUENCE'],
  [779, 'CORRUPT_INDEX'],
  [1555, 'CONSTRAINT_PRIMARYKEY'],
  [2067, 'CONSTRAINT_UNIQUE'],
])

interface NodeSqliteError extends Error {
  code?: string
  errcode?: number
}

/** node:sqlite says `ERR_SQLITE_ERROR` with the number in `errcode`; better-sqlite3 names the code. */
function named(error: unknown): unknown {
  const failure = error as NodeSqliteError
  if (typeof failure?.errcode !== 'number') return error
  const name = EXTENDED.get(failure.errcode) ?? PRIMARY[failure.errcode & 0xff]
  if (name) Object.defineProperty(failure, 'code', { value: `SQLITE_${name}`, configurable: true, writable: true })
  return error
}

function guard<T>(fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    throw named(error)
  }
}

function* guardedRows(rows: Iterator<unknown>): Generator<unknown> {
  for (;;) {
    const next = guard(() => rows.next())
    if (next.done) return
    yield next.value
  }
}

interface NodeStatement {
  run(...params: SqlValue[]): { changes: number | bigint }
  get(...params: SqlValue[]): unknown
  all(...params: SqlValue[]): unknown[]
  iterate(...params: SqlValue[]): Iterator<unknown>
}

interface NodeDatabase {
  readonly isOpen: boolean
  exec(sql: string): void
  prepare(sql: string): NodeStatement
  close(): void
}

type NodeSqlite = { DatabaseSync: new (path: string) => NodeDatabase }

let nodeSqlite: NodeSqlite | null | undefined

/** `node:sqlite` when this Node has it; Node 22 warns that it is experimental, which says nothing to a dsh user. */
function loadNodeSqlite(): NodeSqlite | undefined {
  if (nodeSqlite !== undefined) return nodeSqlite ?? undefined
  const emit = process.emitWarning
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message
    if (text.startsWith('SQLite is an experimental feature')) return
    return (emit as (...args: unknown[]) => void).call(process, warning, ...rest)
  }) as typeof process.emitWarning
  try {
    nodeSqlite = require('node:sqlite') as NodeSqlite
  } catch {
    nodeSqlite = null
  } finally {
    process.emitWarning = emit
  }
  return nodeSqlite ?? undefined
}

function nodeEngine(sqlite: NodeSqlite, path: string): SqliteDatabase {
  const db = guard(() => new sqlite.DatabaseSync(path))
  const statement = (prepared: NodeStatement): SqliteStatement => ({
    run: (...params) => guard(() => prepared.run(...params)),
    get: (...params) => guard(() => prepared.get(...params)),
    all: (...params) => guard(() => prepared.all(...params)),
    iterate: (...params) => guardedRows(guard(() => prepared.iterate(...params))),
  })
  return {
    engine: 'node:sqlite',
    get isOpen() {
      return db.isOpen
    },
    exec: (sql) => guard(() => db.exec(sql)),
    prepare: (sql) => statement(guard(() => db.prepare(sql))),
    transaction<T>(fn: () => T, mode: 'deferred' | 'immediate' = 'deferred'): T {
      guard(() => db.exec(mode === 'immediate' ? 'BEGIN IMMEDIATE' : 'BEGIN'))
      let result: T
      try {
        result = fn()
      } catch (error) {
        try {
          db.exec('ROLLBACK')
        } catch {
          // SQLite already rolled back (some errors end the transaction themselves).
        }
        throw named(error)
      }
      guard(() => db.exec('COMMIT'))
      return result
    },
    close: () => db.close(),
  }
}

function betterEngine(Database: typeof BetterSqlite3, path: string): SqliteDatabase {
  const db = new Database(path)
  return {
    engine: 'better-sqlite3',
    get isOpen() {
      return db.open
    },
    exec: (sql) => void db.exec(sql),
    prepare: (sql) => db.prepare(sql) as unknown as SqliteStatement,
    transaction: (fn, mode = 'deferred') => {
      const run = db.transaction(fn)
      return mode === 'immediate' ? run.immediate() : run()
    },
    close: () => db.close(),
  }
}

/** better-sqlite3 if the user installed it (and it loads on this Node), else why not. */
function loadBetterSqlite3(): typeof BetterSqlite3 | Error {
  try {
    return require('better-sqlite3') as typeof BetterSqlite3
  } catch (error) {
    return error as Error
  }
}

/** The engine `openSqlite` would use here, or undefined when this process has neither (for `dsh doctor`). */
export function sqliteEngine(): SqliteDatabase['engine'] | undefined {
  if (loadNodeSqlite()) return 'node:sqlite'
  return loadBetterSqlite3() instanceof Error ? undefined : 'better-sqlite3'
}

/** Opens `path` on the first engine this process has; names both ways out when it has neither. */
export function openSqlite(path: string, feature: string): SqliteDatabase {
  const sqlite = loadNodeSqlite()
  if (sqlite) return nodeEngine(sqlite, path)
  const Database = loadBetterSqlite3()
  if (Database instanceof Error) {
    throw new HarnessError(
      'DEPENDENCY_MISSING',
      `${feature} needs SQLite: run dsh on Node 22.13 or later (it has node:sqlite built in), or install better-sqlite3 where dsh is installed (npm install -g better-sqlite3@12 beside a global dsh, npm install better-sqlite3@12 in the project that has @dsh/cli); ${process.version} has no node:sqlite and better-sqlite3 did not load (${Database.message.split('\n')[0]}). The default JSONL session store needs neither`,
      { dependency: 'better-sqlite3', feature },
    )
  }
  return betterEngine(Database, path)
}
