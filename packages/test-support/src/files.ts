// A folder's files as a test compares them: relative path -> content (base64), read by the test itself,
// never by dsh, so a byte-for-byte comparison with a copy the test made proves what happened on disk.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

/** Every file under `dir` (recursively) as relative path -> base64 content; `.git` folders left out. */
export function fileTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      if (name === '.git') continue
      const abs = join(at, name)
      if (statSync(abs).isDirectory()) walk(abs)
      else out[relative(dir, abs)] = readFileSync(abs).toString('base64')
    }
  }
  walk(dir)
  return out
}
