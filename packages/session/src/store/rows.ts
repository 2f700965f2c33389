// What the stores that keep sessions in tables share (SQLite here, PostgreSQL in
// @dsh/session/store-pg): one row a session, one row an event holding the event's JSON, and the
// checks that tell a damaged table from a short session.
import { HarnessError } from '@dsh/kernel'
import type { ChainVerdict, SessionSummary } from './index.js'
import { chainHash } from './line-seal.js'
import { parseSums } from './sums.js'

/** A row of the sessions table (a database may hand integers back as text). */
export interface SessionRow {
  id: string
  cwd: string
  created_at: number | string
  parent: string | null
  title: string | null
  updated_at: number | string
  event_count: number
  /** The running sums (schema 2); null in rows written before. */
  sums?: string | null
}

export function summaryOfRow(row: SessionRow, location: string): SessionSummary {
  const sums = parseSums(row.sums)
  return {
    ...(sums ? { messageCount: sums.messageCount, cost: sums.cost } : {}),
    id: row.id,
    cwd: row.cwd,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    eventCount: row.event_count,
    location,
    ...(row.title ? { title: row.title } : {}),
    ...(row.parent ? { parentSession: row.parent } : {}),
  }
}

/** Parses a stored JSON column; `SESSION_CORRUPT` names `what` when it is not JSON. */
export function parseColumn(location: string, text: string, what: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new HarnessError('SESSION_CORRUPT', `${location}: ${what} is not JSON`, { file: location })
  }
}

/** The event a row holds; `SESSION_CORRUPT` when the body is not JSON or carries another seq. */
export function eventOfRow(location: string, seq: number, body: string): unknown {
  const record = parseColumn(location, body, `event ${seq}`)
  if ((record as { seq?: unknown })?.seq !== seq) {
    throw new HarnessError('SESSION_CORRUPT', `${location}: event row ${seq} holds another seq`, { file: location })
  }
  return record
}

/**
 * The event count kept in the same transactions as the events must match the rows read: a mismatch
 * is damage (`why` says what kind), never a short session.
 */
export function checkEventCount(location: string, found: number, recorded: number, why: string): void {
  if (found === recorded) return
  throw new HarnessError('SESSION_CORRUPT', `${location}: holds ${found} events but recorded ${recorded}; ${why}`, {
    file: location,
    found,
    recorded,
  })
}

/** One stored event row as `verifyRows` reads it: its seq, its JSON as written, its chain hash. */
export interface ChainRow {
  seq: number
  body: string
  hash: string | null
}

/**
 * Checks a table store's hash chain: the header's text starts it, each event row's hash must be the
 * hash of the one before it followed by its body, seqs dense from 0, and as many rows as the session
 * row recorded. Rows written before chains existed (no hash) may only come first (`unchained`).
 */
export function verifyRows(headerText: string, rows: Iterable<ChainRow>, recorded: number): ChainVerdict {
  let previous: string | undefined = chainHash(undefined, headerText)
  let chained = false
  let unchained = 0
  let expected = 0
  const broken = (seq: number, kind: Extract<ChainVerdict, { ok: false }>['kind'], why: string): ChainVerdict => ({
    ok: false,
    seq,
    kind,
    message: `event ${seq} ${why}`,
  })
  for (const row of rows) {
    if (row.seq !== expected) {
      return row.seq > expected
        ? broken(expected, 'missing', `is missing (event ${row.seq} follows event ${expected - 1})`)
        : broken(row.seq, 'moved', `is out of place (found after event ${expected - 1})`)
    }
    if (row.hash === null) {
      if (chained) return broken(row.seq, 'altered', 'lost its chain hash')
      unchained++
      // Rows before the chain: the first chained row starts from nothing, as the writer did.
      previous = undefined
    } else {
      chained = true
      const hash = chainHash(previous, row.body)
      if (hash !== row.hash)
        return broken(
          row.seq,
          'altered',
          'does not match its chain hash (its content, or the event before it, changed)',
        )
      previous = hash
    }
    expected++
  }
  if (recorded > expected)
    return broken(
      expected,
      'truncated',
      `and after are missing: the session row recorded ${recorded} events, the table holds ${expected}`,
    )
  if (!previous)
    return {
      ok: false,
      seq: -1,
      kind: 'unreadable',
      message: 'the session carries no chain: it was written before dsh kept hash chains',
    }
  return { ok: true, events: expected, lastHash: previous, unchained }
}
