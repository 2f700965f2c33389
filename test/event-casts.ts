// Session events narrow (see packages/session/README.md), so a reader never casts an event's data.
// This finds the casts that say otherwise: `<expr>.data as` in source and test files of every
// workspace outside packages/session (whose log internals validate raw records before typing them).
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

export interface Cast {
  file: string
  line: number
  text: string
}

const SKIP = new Set(['node_modules', 'dist', '.git', 'coverage'])
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/
const CAST = /\.data\s*\)?\s+as\s/

function* files(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue
    const path = join(dir, name)
    if (statSync(path).isDirectory()) yield* files(path)
    else if (SOURCE.test(name)) yield path
  }
}

/** Every cast of event data under `root`'s workspaces and `test/`, except in packages/session. */
export function findDataCasts(root: string): Cast[] {
  const found: Cast[] = []
  const tops = ['apps', 'bundles', 'packages', 'scripts', 'bench', 'test'].map((top) => join(root, top))
  for (const top of tops) {
    if (!statSync(top, { throwIfNoEntry: false })?.isDirectory()) continue
    for (const path of files(top)) {
      const file = relative(root, path).split('\\').join('/')
      if (file.startsWith('packages/session/')) continue
      const lines = readFileSync(path, 'utf8').split('\n')
      lines.forEach((text, index) => {
        if (CAST.test(text)) found.push({ file, line: index + 1, text: text.trim() })
      })
    }
  }
  return found
}
