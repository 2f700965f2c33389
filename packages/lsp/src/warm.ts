// Which language servers a workspace will need, guessed cheaply before anyone asks: a bounded walk of
// its top levels (no dot directories, no node_modules or build output) looking for files a configured
// server handles. Starting those servers when the session opens moves their cold start (seconds for a
// TypeScript project) off the first write's result.
import { readdirSync } from 'node:fs'
import { extname, join } from 'node:path'

const SKIP = new Set(['node_modules', 'dist', 'build', 'target', 'out', 'vendor', '__pycache__', 'venv'])

/**
 * The extensions present in `root` down to `depth` levels (looking at no more than `limit` entries),
 * each with the first file found: opening one file is what makes a server load its project.
 */
export function extensionsIn(root: string, depth = 2, limit = 2000): Map<string, string> {
  const found = new Map<string, string>()
  let seen = 0
  const walk = (dir: string, level: number) => {
    let entries: import('node:fs').Dirent[]
    try {
      entries = readdirSync(dir, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      if (++seen > limit) return
      if (entry.isFile()) {
        const ext = extname(entry.name)
        if (ext && !found.has(ext)) found.set(ext, join(dir, entry.name))
      } else if (entry.isDirectory() && level < depth && !entry.name.startsWith('.') && !SKIP.has(entry.name)) {
        walk(join(dir, entry.name), level + 1)
      }
    }
  }
  walk(root, 0)
  return found
}
