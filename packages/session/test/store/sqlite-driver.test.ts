// The two SQLite engines behind the stores: node:sqlite wherever the running Node has it unflagged, else
// better-sqlite3; both report SQLite's result codes by name. `npm run test:node-lines` runs this file
// (and the store suites) on Node 22 and 26, where the engine is node:sqlite.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openSqlite } from '../../src/store/sqlite-driver.js'
import { tempDir } from './helpers.js'

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
const hasNodeSqlite = major > 22 || (major === 22 && minor >= 13)

describe('openSqlite', () => {
  it(`uses ${hasNodeSqlite ? 'node:sqlite' : 'better-sqlite3'} on Node ${process.versions.node}`, () => {
    const db = openSqlite(':memory:', 'the test')
    expect(db.engine).toBe(hasNodeSqlite ? 'node:sqlite' : 'better-sqlite3')
    db.close()
    expect(db.isOpen).toBe(false)
  })

  it('names a duplicate key and rolls the whole transaction back', () => {
    const db = openSqlite(':memory:', 'the test')
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY)')
    let caught: unknown
    try {
      db.transaction(() => {
        db.prepare('INSERT INTO t VALUES (?)').run('a')
        db.prepare('INSERT INTO t VALUES (?)').run('a')
      }, 'immediate')
    } catch (error) {
      caught = error
    }
    expect((caught as { code?: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY')
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).toMatchObject({ n: 0 })
    expect(db.transaction(() => Number(db.prepare('INSERT INTO t VALUES (?)').run('b').changes))).toBe(1)
    expect([...db.prepare('SELECT id FROM t').iterate()]).toEqual([expect.objectContaining({ id: 'b' })])
    db.close()
  })

  it('names a file that is not a database', () => {
    using dir = tempDir()
    const path = join(dir.path, 'not.sqlite')
    writeFileSync(path, 'this is not a database, just text that is long enough to fill a header page. '.repeat(20))
    let caught: unknown
    try {
      const db = openSqlite(path, 'the test')
      db.prepare('SELECT * FROM sqlite_master').all()
    } catch (error) {
      caught = error
    }
    expect((caught as { code?: string }).code).toBe('SQLITE_NOTADB')
  })
})
