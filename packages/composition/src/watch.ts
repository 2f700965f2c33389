// Hot reconfiguration: watch the user's patch files; a good edit reconfigures the running tree, a bad
// edit (unreadable YAML, invalid rows, a row that fails to activate) keeps the last good tree.
import { type FSWatcher, watch } from 'node:fs'
import { basename, dirname } from 'node:path'
import type { EffectiveTree } from './layers.js'
import { formatAudit, type TreeRuntime } from './runtime.js'

export type WatchReport =
  | { ok: true; added: string[]; removed: string[]; warnings: string[] }
  | { ok: false; error: string }

declare module 'cordis' {
  interface Events {
    /**
     * Emitted on the running tree's root after each watched edit was handled: applied (`ok`), or
     * refused with the last good tree kept. Long-lived surfaces report it to their clients.
     */
    'config/changed'(report: WatchReport): void
  }
}

export interface WatchOptions {
  runtime: TreeRuntime
  /** The files to watch (they may not exist yet). */
  files: string[]
  /** Recomposes the tree from the files; throws on bad input. */
  compose: () => EffectiveTree
  onReport: (report: WatchReport) => void
  debounceMs?: number
}

/**
 * Starts watching. Returns a disposer that stops the watchers and waits for a running reconfiguration.
 * Reconfigurations are serialised; an edit during one schedules exactly one more.
 */
export function watchConfig(options: WatchOptions): () => Promise<void> {
  const { runtime, compose, debounceMs = 100 } = options
  const onReport = (report: WatchReport) => {
    options.onReport(report)
    runtime.root.emit('config/changed', report)
  }
  const names = new Map<string, Set<string>>()
  for (const file of options.files) {
    const dir = dirname(file)
    const set = names.get(dir) ?? new Set()
    set.add(basename(file))
    names.set(dir, set)
  }
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> = Promise.resolve()
  let stopped = false

  const reconfigure = async (): Promise<void> => {
    const previous = runtime.tree
    let next: EffectiveTree
    try {
      next = compose()
    } catch (error) {
      onReport({ ok: false, error: `${(error as Error).message}\nkeeping the last good configuration` })
      return
    }
    const report = await runtime.apply(next)
    const audit = await runtime.audit(report.added)
    if (audit.length > 0 && previous) {
      await runtime.apply(previous)
      onReport({
        ok: false,
        error: `these rows did not activate:\n${formatAudit(audit)}\nrestored the last good configuration`,
      })
      return
    }
    onReport({ ok: true, added: report.added, removed: report.removed, warnings: next.warnings })
  }

  const schedule = (): void => {
    if (stopped) return
    clearTimeout(timer)
    timer = setTimeout(() => {
      running = running.then(reconfigure).catch((error: unknown) => onReport({ ok: false, error: String(error) }))
    }, debounceMs)
  }

  // Watching directories (not files) survives editors that save by rename and files created later.
  const watchers: FSWatcher[] = []
  for (const [dir, files] of names) {
    try {
      watchers.push(
        watch(dir, (_event, name) => {
          if (name && files.has(name.toString())) schedule()
        }),
      )
    } catch (error) {
      onReport({ ok: false, error: `cannot watch ${dir}: ${(error as Error).message}` })
    }
  }

  return async () => {
    stopped = true
    clearTimeout(timer)
    for (const watcher of watchers) watcher.close()
    await running
  }
}
