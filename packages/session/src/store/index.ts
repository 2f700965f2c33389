// @dsh/session/store: the persistence seam. `ctx.sessionStore` is what a provider (JSONL, SQLite)
// offers; `ctx.sessionPersistence` (coordinator.ts) drives it; `ctx.sessionQuery` (query.ts) reads it.
// This module holds only the definition: types, the Context augmentation, shared helpers.
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import type {} from '@dsh/composition'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/settings'
import { checkSessionId, type SessionEvent, type SessionHeader } from '../index.js'
import { acquireLease, type Lease } from './lease.js'

declare module '@dsh/settings' {
  interface SettingsMap {
    /** The session store (row `session-store`): `jsonl`, `sqlite` or `postgres://user@host:port/database`. */
    'session.store': string
  }
}

export type { Lease, LeaseOwner } from './lease.js'
export { acquireLease, ownerAlive, processStartTime, readLease } from './lease.js'

/** One write of a session: its header on the first write, then events in seq order. */
export interface WriteBatch {
  header?: SessionHeader
  events: readonly SessionEvent[]
  /** Make everything written so far durable (fsync / synchronous commit) before resolving. */
  sync: boolean
}

/** The durable facts of one session, as a provider read them (not yet validated). */
export interface StoredSession {
  /** The parsed header record, or undefined when the file holds no complete header. */
  header: unknown
  /** Parsed event records in storage order. */
  records: unknown[]
  /** Where it lives (a file path, or `db#id`), for error messages. */
  location: string
  /** A torn final write that `repairTail` will remove: how many bytes, and why it is torn. */
  torn?: { bytes: number; reason: string }
  /** The hash chain's last hash (stores that keep a chain), which the next write continues. */
  lastHash?: string
}

/** What `verify` found: the chain whole, or the first line that breaks it. */
export type ChainVerdict =
  | { ok: true; events: number; lastHash: string; unchained: number }
  | {
      ok: false
      /** The event (seq) where the chain breaks; -1 for the header. */
      seq: number
      kind: 'altered' | 'missing' | 'moved' | 'truncated' | 'unreadable'
      message: string
    }

/** A session's cost as a session list keeps it (a type alias: it is a JSON value). */
export type SessionCost = {
  usd: number
  requests: number
  unknownRequests: number
  /** The same per `provider:model` (as each request's header named it); absent from older lists. */
  models?: Record<string, ModelCost>
}

/** One model's share of a session's cost. */
export type ModelCost = {
  usd: number
  requests: number
  unknownRequests: number
}

/** What the session list shows, read without loading whole logs. */
export interface SessionSummary {
  id: string
  /** The first user message's text, shortened. */
  title?: string
  cwd: string
  createdAt: number
  /** Milliseconds of the last durable event (or the header). */
  updatedAt: number
  parentSession?: string
  eventCount: number
  /**
   * The messages of the conversation: what the person sent and the model answered (not the context
   * notes dsh adds). Kept by every store (`store/sums.ts`); absent for sessions a table store wrote before schema 2.
   */
  messageCount?: number
  /**
   * What its model requests cost (the fork seed excluded): `usd` sums the requests with a known price;
   * `unknownRequests` had none. Kept by every store; absent for sessions a table store wrote before schema 2.
   */
  cost?: SessionCost
  location: string
  /** Set when the log could not be read (`CODE: message`); the other fields are then best effort. */
  error?: string
  /**
   * Who else holds the session's lease, from stores that keep leases themselves (`lease`, e.g.
   * PostgreSQL shared by many hosts); absent when no one does or this process does.
   */
  holder?: SessionHolder
}

/** Another process's lease on a session, as a session list shows it. */
export interface SessionHolder {
  host: string
  pid: number
  /** Milliseconds since the epoch (the store's clock). */
  acquiredAt: number
  /** When the lease lapses unless renewed (the store's clock). */
  expiresAt: number
  /**
   * Whether the holder may still write: false once its lease expired or it is known dead, and then
   * opening the session takes it over.
   */
  live: boolean
}

/**
 * A persistence backend. All methods may reject; errors carry HarnessError codes where the cause is
 * known (SESSION_CORRUPT, SESSION_STORE_SCHEMA_UNSUPPORTED, SESSION_EXISTS). A rejected `write`
 * leaves no partial batch visible to a later successful write (providers roll back or truncate).
 */
export interface SessionStore {
  readonly kind: string
  /** Where lease files live (one per session id). */
  readonly leaseDir: string
  /** Human-readable location of a session. */
  locate(id: string): string
  write(id: string, batch: WriteBatch): Promise<void>
  /** The stored facts, or undefined when the session does not exist. */
  read(id: string): Promise<StoredSession | undefined>
  /** Removes the torn tail `read` reported. */
  repairTail(id: string, stored: StoredSession): Promise<void>
  /** Summaries of every durable session, cheaply. */
  summaries(): Promise<SessionSummary[]>
  /** Releases per-session handles (after the last write of a closed session). */
  release(id: string): Promise<void>
  /**
   * Keeps the longest readable prefix of a damaged session and moves the rest, byte for byte, to a
   * side file next to it. The caller holds the lease. Optional: stores without it cannot repair.
   */
  repair?(id: string): Promise<SessionRepair>
  /**
   * Checks the session's hash chain as stored: every event's hash against its content and the one
   * before it, dense seqs, and the count the store recorded. Optional: a store without a chain has none.
   * `unchained` counts leading events written before chains existed (not covered).
   */
  verify?(id: string): Promise<ChainVerdict>
  /**
   * Deletes a durable session (the caller holds its lease); false when it did not exist. Optional:
   * stores without it cannot delete. Blobs it referenced are the caller's to sweep.
   */
  remove?(id: string): Promise<boolean>
  /**
   * Takes the single-writer lease of a session in the store itself (a database shared by many hosts)
   * instead of a lock file in `leaseDir`. Such a store refuses the writes of a holder that lost its
   * lease (fencing). Optional: without it, leases are lock files (`acquireLease`).
   */
  lease?(id: string): Promise<Lease>
  /**
   * Full-text search the store keeps itself, in the same transactions as the events; the query
   * service uses it instead of its SQLite index. Optional, with `rebuildSearch`.
   */
  search?(text: string, limit: number): Promise<SearchHit[]>
  /** Rebuilds the store's own search index; returns how many events have searchable text. */
  rebuildSearch?(): Promise<number>
}

/** One full-text search match. */
export interface SearchHit {
  sessionId: string
  seq: number
  type: string
  /** The matching text with matches in [brackets]. */
  snippet: string
}

/** The lease of session `id`: the store's own (`lease`), else a lock file in its `leaseDir`. */
export async function leaseSession(store: SessionStore, id: string): Promise<Lease> {
  return store.lease ? store.lease(id) : acquireLease(store.leaseDir, id)
}

/**
 * The full id of a durable session named by its id or any unique prefix of it, as git takes commit
 * ids: an exact id wins; a prefix matching one session gives its id. Throws SESSION_ID_AMBIGUOUS
 * listing the candidates, SESSION_NOT_FOUND when nothing matches.
 */
export async function resolveSessionId(store: SessionStore, idOrPrefix: string): Promise<string> {
  if ((await store.read(checkSessionId(idOrPrefix)))?.header) return idOrPrefix
  const matches = (await store.summaries()).filter((s) => s.id.startsWith(idOrPrefix))
  const [only] = matches
  if (matches.length === 1 && only) return only.id
  if (matches.length > 1) {
    const ids = matches.map((s) => s.id)
    throw new HarnessError(
      'SESSION_ID_AMBIGUOUS',
      `session id prefix "${idOrPrefix}" matches ${ids.length} sessions: ${ids.join(', ')}; give more of the id`,
      { prefix: idOrPrefix, ids },
    )
  }
  throw new HarnessError(
    'SESSION_NOT_FOUND',
    `no durable session ${idOrPrefix} at ${store.locate(idOrPrefix)} (dsh sessions lists them)`,
    { id: idOrPrefix },
  )
}

/** What `repair` did. `sideFile` is absent when nothing had to move. */
export interface SessionRepair {
  location: string
  /** Lines kept: the header and the events before the first damaged line. */
  keptLines: number
  movedBytes: number
  sideFile?: string
}

declare module 'cordis' {
  interface Context {
    sessionStore: SessionStore
  }
}

/** `SESSION_EXISTS`: a new session's id is already durable at `location`. */
export function sessionExists(id: string, location: string): HarnessError {
  return new HarnessError('SESSION_EXISTS', `session ${id} already exists at ${location}; resume it instead`, {
    id,
    location,
  })
}

/**
 * The sessions directory: `dir` when given and non-empty, else `<home>/sessions` where home is the
 * launcher's `$DSH_HOME`, else `$DSH_HOME`, else `~/.dsh`.
 */
export function sessionsDir(ctx: Context, dir: string | undefined): string {
  if (dir) return resolve(dir)
  const home = ctx.get('launcher')?.config.home ?? process.env.DSH_HOME ?? join(homedir(), '.dsh')
  return join(resolve(home), 'sessions')
}

/**
 * The title of a session: the first user message's text, on one line, at most 80 characters. Context
 * snapshots (`origin: 'context'`, written by the loop, not the user) never title a session. Takes a
 * raw record: session lists read files without validating them, so the shape is checked here.
 */
export function titleOf(record: unknown): string | undefined {
  if (!isRecord(record) || record.type !== 'user/message' || !isRecord(record.data)) return undefined
  if (record.data.origin === 'context') return undefined
  // The first text block is what the person typed; attachments and `@` references follow it.
  const text = (textBlocks(record.data.message, ['text'])[0] ?? '').replace(/\s+/g, ' ').trim()
  if (!text) return undefined
  return text.length > 80 ? `${text.slice(0, 79)}…` : text
}

/** Whether a raw record is a message of the conversation: the person's (not a context note) or the model's. */
export function isConversationMessage(record: unknown): boolean {
  if (!isRecord(record) || !isRecord(record.data)) return false
  if (record.type === 'assistant/message') return true
  return record.type === 'user/message' && record.data.origin !== 'context'
}

/** The title a `session/title` record (the row `session-title`) gives; it overrides the first prompt. */
export function writtenTitleOf(record: unknown): string | undefined {
  if (!isRecord(record) || record.type !== 'session/title' || !isRecord(record.data)) return undefined
  return typeof record.data.title === 'string' && record.data.title ? record.data.title : undefined
}

/** The searchable text of a raw record: the text and reasoning blocks of its `data.message`. */
export function textOf(record: unknown): string {
  if (!isRecord(record) || !isRecord(record.data)) return ''
  return textBlocks(record.data.message, ['text', 'reasoning']).join('\n')
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

function textBlocks(message: unknown, types: readonly string[]): string[] {
  if (!isRecord(message) || !Array.isArray(message.content)) return []
  return message.content.flatMap((block: unknown) =>
    isRecord(block) && types.includes(String(block.type)) && typeof block.text === 'string' ? [block.text] : [],
  )
}

export { verifyLines } from './chain.js'
export { chainLine } from './line-seal.js'
