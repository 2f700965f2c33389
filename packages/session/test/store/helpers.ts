// Fixtures for the session-store tests: temp dirs, a booted Context with a chosen backend, builders.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, type Plugin } from '@dsh/kernel'
import SessionService from '@dsh/session'
import SessionPersistence, { type PersistenceConfig } from '../../src/store/coordinator.js'
import JsonlSessionStore from '../../src/store/jsonl.js'
import SqliteSessionStore from '../../src/store/sqlite.js'

/**
 * One session store provider as the shared suites (test/suites/) see it; other packages' providers
 * (PostgreSQL) pass the same suites with a fixture of their own.
 */
export interface StoreFixture {
  name: string
  plugin: Plugin
  /** The row config of the store of one test: the same `dir` is the same store. */
  config(dir: string): Record<string, unknown>
  /** The module a child process (test/fixtures/crash-writer.mjs) plugs, with `config(dir)`. */
  module: string
  /** Leaves the lease of `id` as a crashed owner would: held by a process that is gone. */
  orphanLease(dir: string, id: string): Promise<void>
}

/** A lock file naming a pid that cannot be alive on this host. */
async function orphanLockFile(dir: string, id: string): Promise<void> {
  writeFileSync(
    join(dir, `${id}.lock`),
    JSON.stringify({ pid: 2 ** 22 + 7, host: hostname(), acquiredAt: 0, token: 'dead' }),
  )
}

export const jsonlFixture: StoreFixture = {
  name: 'jsonl',
  plugin: JsonlSessionStore as unknown as Plugin,
  config: (dir) => ({ dir }),
  module: '@dsh/session/store/jsonl',
  orphanLease: orphanLockFile,
}

export const sqliteFixture: StoreFixture = {
  name: 'sqlite',
  plugin: SqliteSessionStore as unknown as Plugin,
  config: (dir) => ({ dir }),
  module: '@dsh/session/store/sqlite',
  orphanLease: orphanLockFile,
}

export type Backend = 'jsonl' | 'sqlite'

const fixtures: Record<Backend, StoreFixture> = { jsonl: jsonlFixture, sqlite: sqliteFixture }

/** The fixture of a local backend by name, or the fixture itself. */
export function fixtureOf(backend: Backend | StoreFixture): StoreFixture {
  return typeof backend === 'string' ? fixtures[backend] : backend
}

export function tempDir(): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), 'dsh-session-'))
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) }
}

/** Waits until `names` are provided on `ctx` (plugins activate asynchronously). */
export async function until(ctx: Context, ...names: string[]): Promise<void> {
  // Time-bounded, not round-bounded: an async plugin body (reading files) may take many turns on a loaded machine.
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (names.every((name) => ctx.get(name) !== undefined)) return
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
  throw new Error(`services never appeared: ${names.filter((name) => ctx.get(name) === undefined).join(', ')}`)
}

export const storePlugin = (backend: Backend | StoreFixture): Plugin => fixtureOf(backend).plugin

/** A root with sessions, the backend and the coordinator, all on `dir`. */
export async function boot(
  backend: Backend | StoreFixture,
  dir: string,
  persistence: PersistenceConfig = {},
  extra: [Plugin, unknown][] = [],
): Promise<Booted> {
  const ctx = new Context()
  const fibers = [
    ctx.plugin(SessionService, { cwd: '/work' }),
    ctx.plugin(storePlugin(backend), fixtureOf(backend).config(dir)),
    ctx.plugin(SessionPersistence, { delayMs: 2, ...persistence }),
    ...extra.map(([plugin, config]) => ctx.plugin(plugin, config)),
  ]
  await until(ctx, 'sessions', 'sessionStore', 'sessionPersistence')
  const dispose = async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  }
  return Object.assign(ctx, { dispose }) as Booted
}

/** A booted root; `dispose()` disposes its plugins in reverse order, like the composition runtime. */
export type Booted = Context & { dispose(): Promise<void> }

export { assistant, toolResult, user } from '../helpers.js'

export const append = { surfaceOp: { op: 'append' as const } }
