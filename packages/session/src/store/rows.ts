// What the stores that keep sessions in tables share (SQLite here, PostgreSQL in
// @dsh/session/store-pg): one row a session, one row an event holding the event's JSON, and the
// checks that tell a damaged table from a short session.
import { HarnessError } from '@dsh/kernel'
import type { SessionSummary } from './index.js'

/** A row of the sessions table (a database may hand integers back as text). */
export interface SessionRow {
  id: string
  cwd: string
  created_at: number | string
  parent: string | null
  title: string | null
  updated_at: number | string
  event_count: number
}

export function summaryOfRow(row: SessionRow, location: string): SessionSummary {
  return {
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
