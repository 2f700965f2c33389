// The records of background runs (`dsh run --bg`), one JSON file per session under
// $DSH_HOME/background: written by the detached process (its pid, when it started, and at the end how
// it ended), read by every view of the running agents.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface BackgroundRecord {
  sessionId: string
  pid: number
  startTime?: number
  host: string
  cwd: string
  /** The task, shortened. */
  task: string
  log: string
  startedAt: number
  /** Set when the run ended: how, and its exit code. */
  endedAt?: number
  reason?: string
  exitCode?: number
}

/** `$DSH_HOME/background`. */
export function backgroundDir(home: string): string {
  return join(home, 'background')
}

/** Every background run recorded under `dir`, newest first (unreadable files skipped). */
export function readBackgroundRecords(dir: string): BackgroundRecord[] {
  let names: string[]
  try {
    names = readdirSync(dir).filter((name) => name.endsWith('.json'))
  } catch {
    return []
  }
  const out: BackgroundRecord[] = []
  for (const name of names) {
    try {
      const record = JSON.parse(readFileSync(join(dir, name), 'utf8')) as BackgroundRecord
      if (typeof record.sessionId === 'string' && typeof record.pid === 'number') out.push(record)
    } catch {}
  }
  return out.sort((a, b) => b.startedAt - a.startedAt)
}
