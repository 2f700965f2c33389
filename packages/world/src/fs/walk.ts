// Directory walking for glob and grep: depth-first, sorted, honouring every .gitignore on the way
// down (each relative to its own directory). `.git` is always skipped; `node_modules` unless asked.
import { join, relative } from 'node:path'
import ignore, { type Ignore } from 'ignore'
import picomatch from 'picomatch'
import { type FileIo, localIo, readBounded } from './io.js'

export interface WalkEntry {
  /** Relative to the walk root, `/`-separated. */
  rel: string
  abs: string
}

interface Layer {
  base: string
  rules: Ignore
}

/** At most this many files are visited by one walk (the result says truncated beyond it). */
export const MAX_WALK_FILES = 100_000
/** A larger .gitignore is not read (its rules are skipped). */
const MAX_IGNORE_BYTES = 1024 * 1024

async function loadIgnore(io: FileIo, dir: string, rel: string): Promise<Layer | undefined> {
  try {
    // Bounded and regular files only: a FIFO named .gitignore must not hang every walk.
    const text = (await readBounded(io, join(dir, '.gitignore'), MAX_IGNORE_BYTES, { whole: true })).bytes.toString(
      'utf8',
    )
    return { base: rel, rules: ignore().add(text) }
  } catch {
    return undefined
  }
}

function ignored(layers: readonly Layer[], rel: string, isDir: boolean): boolean {
  for (const layer of layers) {
    const sub = layer.base === '' ? rel : rel.slice(layer.base.length + 1)
    if (sub && layer.rules.ignores(isDir ? `${sub}/` : sub)) return true
  }
  return false
}

/** Yields the files under `root` (not directories). Stops early when `signal` aborts. */
export async function* walkFiles(
  root: string,
  options: { includeIgnored?: boolean; signal?: AbortSignal } = {},
  io: FileIo = localIo,
): AsyncGenerator<WalkEntry> {
  const stack: { dir: string; rel: string; layers: Layer[] }[] = [{ dir: root, rel: '', layers: [] }]
  let visited = 0
  while (stack.length > 0) {
    if (options.signal?.aborted) return
    const { dir, rel, layers: parentLayers } = stack.pop() as (typeof stack)[number]
    let layers = parentLayers
    if (!options.includeIgnored) {
      const own = await loadIgnore(io, dir, rel)
      if (own) layers = [...parentLayers, own]
    }
    let entries: Awaited<ReturnType<FileIo['readdir']>>
    try {
      entries = await io.readdir(dir)
    } catch {
      continue
    }
    entries.sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0))
    const files: WalkEntry[] = []
    for (const entry of entries) {
      const childRel = rel ? `${rel}/${entry.name}` : entry.name
      const isDir = entry.kind === 'directory'
      if (isDir && entry.name === '.git') continue
      if (!options.includeIgnored && (ignored(layers, childRel, isDir) || (isDir && entry.name === 'node_modules'))) {
        continue
      }
      if (isDir) stack.push({ dir: join(dir, entry.name), rel: childRel, layers })
      else if (entry.kind === 'file' || entry.kind === 'symlink')
        files.push({ rel: childRel, abs: join(dir, entry.name) })
    }
    for (const file of files.reverse()) {
      if (++visited > MAX_WALK_FILES) return
      yield file
    }
  }
}

/**
 * A matcher for relative paths. A pattern without `/` matches the base name at any depth (`*.ts`);
 * otherwise the whole relative path (`src/**\/*.ts`).
 */
export function globMatcher(pattern: string): (rel: string) => boolean {
  const matcher = picomatch(pattern, { dot: true, basename: !pattern.includes('/') })
  return (rel) => matcher(rel)
}

export function relativeTo(root: string, abs: string): string {
  return relative(root, abs).split('\\').join('/')
}
