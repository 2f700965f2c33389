// The built `dsh` as a child process against the mock model server, in a private $DSH_HOME (the CLI
// tests' launcher), and what it leaves on disk: a session's events, the blob store's files.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type ChildRun, runDsh } from '../../../apps/cli/test/dsh-child.js'

export { bin } from '../../../apps/cli/test/dsh-child.js'

/** `dsh ...args` in `cwd` with DSH_HOME `home` and the mock model at `url`. */
export const dsh = (args: string[], options: { cwd: string; home: string; url: string }): Promise<ChildRun> =>
  runDsh(args, { home: options.home, cwd: options.cwd, modelUrl: options.url })

export interface LoggedEvent {
  type: string
  seq: number
  data: Record<string, unknown>
}

/** The events of the one durable session in `home` (or the one named `id`). */
export function sessionEvents(home: string, id?: string): LoggedEvent[] {
  const dir = join(home, 'sessions')
  const file = id ? `${id}.jsonl` : (readdirSync(dir).find((name) => name.endsWith('.jsonl')) as string)
  return readFileSync(join(dir, file), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line) as LoggedEvent)
}

/** Files in the blob store of `home`. */
export function blobFiles(home: string): string[] {
  const root = join(home, 'blobs', 'sha256')
  let prefixes: string[]
  try {
    prefixes = readdirSync(root)
  } catch {
    return []
  }
  return prefixes.flatMap((prefix) => readdirSync(join(root, prefix)))
}
