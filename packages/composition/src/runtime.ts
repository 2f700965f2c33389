// The running plugin tree: resolves each row's module, applies it under one root Context, waits for
// the tree to settle, and audits what did not activate. `apply()` is used for the first boot and for
// every reconfiguration, so both follow one code path.
import { createRequire } from 'node:module'
import { isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Context, type Fiber, FiberState, HarnessError, type Plugin } from '@dsh/kernel'
import { ConfigExpr, type EvalEnvironment, evaluateConfig, evaluateExpr } from './expressions.js'
import type { EffectiveRow, EffectiveTree } from './layers.js'
import { renamedModule } from './renamed.js'

export type AuditKind = 'import' | 'config' | 'failed' | 'pending'

/** One row that did not activate. */
export interface AuditEntry {
  id: string
  use: string
  kind: AuditKind
  message: string
  /** For `pending`: the services the row injects that no active row provides. */
  missing?: string[]
}

export interface ApplyReport {
  added: string[]
  removed: string[]
}

export interface LogRecord {
  level: 'error' | 'warn' | 'info' | 'debug'
  name: string
  text: string
  error?: unknown
}

export interface RuntimeOptions {
  env?: Readonly<Record<string, string | undefined>>
  platform?: string
  /** Receives kernel log messages (plugin failures are logged here by Cordis). */
  onLog?: (record: LogRecord) => void
}

interface LiveRow {
  row: EffectiveRow
  fingerprint: string
  plugin?: Plugin
  fiber?: Fiber
  failure?: AuditEntry
}

interface Prepared {
  row: EffectiveRow
  fingerprint: string
  plugin?: Plugin
  config?: unknown
  failure?: AuditEntry
}

/** Resolves a row's `use` to a file URL: a path relative to the layer's file, or a package specifier. */
export function resolveUse(use: string, baseDir: string): string {
  if (use.startsWith('.') || isAbsolute(use)) return pathToFileURL(resolve(baseDir, use)).href
  // Never from the working directory: a checkout's node_modules must not supply a module a row names.
  const bases = [join(baseDir, 'package.json'), import.meta.url]
  for (const base of bases) {
    try {
      return pathToFileURL(createRequire(base).resolve(use)).href
    } catch {}
  }
  try {
    // ESM-only packages (an "import" condition without "default") resolve only this way.
    return import.meta.resolve(use)
  } catch {
    const renamed = renamedModule(use)
    const fix = renamed ? `it is now "${renamed}": change the row's use` : 'is the package installed?'
    throw new HarnessError('MODULE_NOT_FOUND', `cannot resolve module "${use}" (${fix})`, { use, renamed })
  }
}

function isPlugin(value: unknown): value is Plugin {
  return typeof value === 'function' || (typeof value === 'object' && value !== null && 'apply' in value)
}

function providedBy(plugin: Plugin | undefined): string[] {
  const provide = (plugin as { provide?: string | string[] } | undefined)?.provide
  return provide === undefined ? [] : Array.isArray(provide) ? provide : [provide]
}

function fingerprintOf(row: EffectiveRow): string {
  const use = row.use.startsWith('.') ? resolve(row.baseDir, row.use) : row.use
  return JSON.stringify({ use, config: row.config ?? null })
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

export class TreeRuntime {
  readonly root: Context
  readonly #scope: EvalEnvironment
  readonly #live = new Map<string, LiveRow>()
  #tree: EffectiveTree | undefined
  #disposed = false

  constructor(options: RuntimeOptions = {}) {
    this.#scope = { env: options.env ?? process.env, platform: options.platform ?? process.platform }
    this.root = new Context()
    const onLog = options.onLog
    if (onLog) {
      this.root.logger.exporter({
        export: (message) => {
          const [first, ...rest] = message.args
          const text = [first, ...rest].map((arg) => (arg instanceof Error ? arg.message : String(arg))).join(' ')
          onLog({ level: message.type, name: message.name, text, error: first instanceof Error ? first : undefined })
        },
      })
    }
  }

  /** The tree last applied (undefined before the first `apply`). */
  get tree(): EffectiveTree | undefined {
    return this.#tree
  }

  /** Row ids that are currently applied (active, pending or failed), in tree order. */
  get rowIds(): string[] {
    return [...this.#live.keys()]
  }

  /** The Cordis fiber of an applied row. */
  fiberOf(id: string): Fiber | undefined {
    return this.#live.get(id)?.fiber
  }

  /**
   * The row a fiber belongs to: the applied row whose fiber is it or an ancestor of it (a row's
   * plugins may start their own). Undefined for fibers outside every row (the kernel's, a test's).
   */
  rowOf(fiber: unknown): string | undefined {
    // By uid: the fiber a row's `plugin()` returned and the one its contexts carry are not one object.
    const rows = new Map<number, string>()
    for (const [id, live] of this.#live) if (typeof live.fiber?.uid === 'number') rows.set(live.fiber.uid, id)
    let current = fiber as Fiber | undefined
    for (let depth = 0; current && depth < 64; depth++) {
      const row = typeof current.uid === 'number' ? rows.get(current.uid) : undefined
      if (row) return row
      const parent: Fiber | undefined = current.parent?.fiber
      if (!parent || parent === current) return undefined
      current = parent
    }
    return undefined
  }

  /**
   * Makes the running tree match `tree`: rows that disappeared, became disabled or changed (module or
   * config) are disposed in reverse order; new and changed rows are imported and applied; then waits
   * for the tree to settle. Failures are recorded for `audit()`, never thrown.
   */
  async apply(tree: EffectiveTree): Promise<ApplyReport> {
    if (this.#disposed) throw new HarnessError('RUNTIME_DISPOSED', 'the plugin tree was disposed')
    const wanted: EffectiveRow[] = []
    const disabledFailures: AuditEntry[] = []
    for (const row of tree.rows) {
      try {
        const disabled =
          row.disabled instanceof ConfigExpr
            ? evaluateExpr(row.disabled, this.#scope, `row "${row.id}" disabled`)
            : row.disabled
        if (disabled !== true && disabled !== 'true') wanted.push(row)
      } catch (error) {
        disabledFailures.push({ id: row.id, use: row.use, kind: 'config', message: messageOf(error) })
      }
    }
    const wantedPrints = new Map(wanted.map((row) => [row.id, fingerprintOf(row)]))
    const removed = [...this.#live.entries()]
      .filter(([id, live]) => wantedPrints.get(id) !== live.fingerprint)
      .map(([id]) => id)
    for (const id of removed.reverse()) await this.#disposeRow(id)

    const fresh = wanted.filter((row) => !this.#live.has(row.id))
    const prepared = await Promise.all(fresh.map((row) => this.#prepare(row, wantedPrints.get(row.id) ?? '')))
    // A start-up phase (bench/startup.mjs): every new row's module is imported; activation follows.
    performance.mark('dsh:rows-imported')
    for (const item of prepared) {
      const live: LiveRow = { row: item.row, fingerprint: item.fingerprint, plugin: item.plugin, failure: item.failure }
      if (item.plugin && !item.failure) live.fiber = this.root.plugin(item.plugin, item.config)
      this.#live.set(item.row.id, live)
    }
    for (const failure of disabledFailures) {
      this.#live.set(failure.id, {
        row: tree.rows.find((r) => r.id === failure.id) as EffectiveRow,
        fingerprint: '',
        failure,
      })
    }
    this.#tree = tree
    await this.settle()
    return { added: fresh.map((row) => row.id), removed }
  }

  async #prepare(row: EffectiveRow, fingerprint: string): Promise<Prepared> {
    let config: unknown
    try {
      config = evaluateConfig(row.config, this.#scope, `row "${row.id}" config`)
    } catch (error) {
      return { row, fingerprint, failure: { id: row.id, use: row.use, kind: 'config', message: messageOf(error) } }
    }
    try {
      const module = (await import(resolveUse(row.use, row.baseDir))) as { default?: unknown }
      if (!isPlugin(module.default)) {
        throw new HarnessError(
          'MODULE_NOT_PLUGIN',
          `module "${row.use}" has no default export that is a Cordis plugin`,
          {
            use: row.use,
          },
        )
      }
      return { row, fingerprint, plugin: module.default, config }
    } catch (error) {
      return { row, fingerprint, failure: { id: row.id, use: row.use, kind: 'import', message: messageOf(error) } }
    }
  }

  async #disposeRow(id: string): Promise<void> {
    const live = this.#live.get(id)
    this.#live.delete(id)
    await live?.fiber?.dispose()
  }

  /** Waits until no fiber in the tree is loading or unloading. */
  async settle(): Promise<void> {
    for (let round = 0; round < 1000; round++) {
      const busy = [...this.root.registry.values()].flatMap((runtime) => [...runtime.fibers]).filter((f) => f.inertia)
      if (busy.length === 0) {
        // One macrotask lets asynchronous plugin bodies that resolved just now report their state.
        await new Promise((done) => setImmediate(done))
        const again = [...this.root.registry.values()].some((runtime) => [...runtime.fibers].some((f) => f.inertia))
        if (!again) return
        continue
      }
      await Promise.all(busy.map((fiber) => fiber.await().catch(() => undefined)))
    }
  }

  /** Rows that did not activate: failed imports or config, failed plugins, and pending injects. */
  async audit(ids?: Iterable<string>): Promise<AuditEntry[]> {
    const only = ids ? new Set(ids) : undefined
    const providers = new Map<string, string>()
    for (const live of this.#live.values()) for (const name of providedBy(live.plugin)) providers.set(name, live.row.id)
    const entries: AuditEntry[] = []
    for (const [id, live] of this.#live) {
      if (only && !only.has(id)) continue
      if (live.failure) {
        entries.push(live.failure)
        continue
      }
      const fiber = live.fiber
      if (!fiber) continue
      if (fiber.state === FiberState.FAILED) {
        const error = await fiber.await().then(
          () => undefined,
          (reason: unknown) => reason,
        )
        entries.push({ id, use: live.row.use, kind: 'failed', message: messageOf(error) })
      } else if (fiber.state === FiberState.PENDING) {
        const missing = Object.keys(fiber.inject).filter((name) => this.root.get(name) === undefined)
        const notes = missing.map((name) => {
          const provider = providers.get(name)
          return provider ? `${name} (its row "${provider}" did not activate)` : `${name} (no row provides it)`
        })
        entries.push({
          id,
          use: live.row.use,
          kind: 'pending',
          missing,
          message: `waiting for service ${notes.join(', ')}`,
        })
      }
    }
    return entries
  }

  /** Disposes every row in reverse tree order, awaiting each. Idempotent. */
  async dispose(): Promise<void> {
    if (this.#disposed) return
    this.#disposed = true
    for (const id of [...this.#live.keys()].reverse()) await this.#disposeRow(id)
  }
}

/** Formats audit entries as the lines the CLI prints. */
export function formatAudit(entries: AuditEntry[]): string {
  const labels: Record<AuditKind, string> = {
    import: 'module failed to import',
    config: 'config error',
    failed: 'plugin failed',
    pending: 'pending',
  }
  return entries.map((e) => `  - ${e.id} (${e.use}): ${labels[e.kind]}: ${e.message}`).join('\n')
}
