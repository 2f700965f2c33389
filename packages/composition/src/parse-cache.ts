// Parsed layer and profile files by content hash, so a start whose files did not change reads JSON
// instead of loading and running the YAML parser (the shipped base bundle alone took 100-250 ms cold).
// A cache directory holds `<sha256>.json` per parsed text: the one built with dsh for its shipped files
// (scripts/parsed-layers.mjs) and `$DSH_HOME/cache/parsed` for the rest, written on a miss. The key is
// the text itself (with the parser's version and the mode), so an edited file is a miss and parses
// again: nothing to invalidate. A missing, unreadable or unwritable cache only costs the parse.
// Decision 391.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import { ConfigExpr } from './expressions.js'
import { yamlVersion } from './lazy.js'

/** Bump when what a parse returns changes (the config tags, the checks) for the same text. */
const FORMAT = 1

export type ParseMode = 'layer' | 'profile' | 'preset'

/** Where cached parses are looked up, in order; the last one is written on a miss. */
export interface ParseCache {
  dirs: string[]
}

/** The cache dsh builds for its shipped bundles and profile templates (next to this module's build). */
export const shippedCacheDir = fileURLToPath(new URL('../parsed/', import.meta.url))

/** The cache of a dsh home: the shipped cache, then `$DSH_HOME/cache/parsed`. */
export function parseCacheOf(home: string): ParseCache {
  return { dirs: [shippedCacheDir, join(home, 'cache', 'parsed')] }
}

export function cacheKey(mode: ParseMode, text: string): string {
  return createHash('sha256').update(`dsh-parse ${FORMAT} yaml ${yamlVersion()} ${mode}\0${text}`).digest('hex')
}

/** A ConfigExpr at `path` of the value, stored beside a JSON copy in which it is `null`. */
type ExprAt = [path: Array<string | number>, kind: ConfigExpr['kind'], source: string]

interface Stored {
  value: unknown
  exprs: ExprAt[]
}

function encode(value: unknown, path: Array<string | number>, exprs: ExprAt[]): unknown {
  if (value instanceof ConfigExpr) {
    exprs.push([[...path], value.kind, value.source])
    return null
  }
  if (Array.isArray(value)) return value.map((item, index) => encode(item, [...path, index], exprs))
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[key] = encode(item, [...path, key], exprs)
    return out
  }
  return value
}

function decode(stored: Stored): unknown {
  let value = stored.value
  for (const [path, kind, source] of stored.exprs) {
    const expr = new ConfigExpr(kind, source)
    if (path.length === 0) {
      value = expr
      continue
    }
    let parent = value as Record<string | number, unknown>
    for (const step of path.slice(0, -1)) parent = parent[step] as Record<string | number, unknown>
    parent[path.at(-1) as string | number] = expr
  }
  return value
}

function read(dir: string, key: string): unknown {
  let text: string
  try {
    text = readFileSync(join(dir, `${key}.json`), 'utf8')
  } catch {
    return undefined
  }
  try {
    const stored = JSON.parse(text) as Stored
    return Array.isArray(stored.exprs) ? { hit: decode(stored) } : undefined
  } catch {
    return undefined // a damaged entry is a miss; the write after the parse replaces it
  }
}

/** Stores `value` under `key` in `dir` if JSON keeps it exactly (not `.inf`, `-0`, ...); never throws. */
export function writeParsed(dir: string, key: string, value: unknown): boolean {
  const exprs: ExprAt[] = []
  const stored: Stored = { value: encode(value, [], exprs), exprs }
  const json = JSON.stringify(stored)
  if (!isDeepStrictEqual(decode(JSON.parse(json) as Stored), value)) return false
  const file = join(dir, `${key}.json`)
  const temp = `${file}.${process.pid}.tmp`
  try {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(temp, json)
    renameSync(temp, file) // readers see the whole entry or none
    return true
  } catch {
    return false
  }
}

/** A parse result that must not be cached: parsing it again has an effect (a warning is printed). */
export class Uncached<T> {
  constructor(readonly value: T) {}
}

/**
 * `parse(text)`, or what it returned for the same text before. `parse` must throw for bad input (a
 * failure is never cached) and return plain data with ConfigExpr leaves, or an `Uncached` value.
 */
export function cachedParse<T>(
  cache: ParseCache | undefined,
  mode: ParseMode,
  text: string,
  parse: () => T | Uncached<T>,
): T {
  const unwrap = (value: T | Uncached<T>) => (value instanceof Uncached ? value.value : value)
  if (!cache || cache.dirs.length === 0) return unwrap(parse())
  const key = cacheKey(mode, text)
  for (const dir of cache.dirs) {
    const found = read(dir, key) as { hit: T } | undefined
    if (found) return found.hit
  }
  const value = parse()
  if (value instanceof Uncached) return value.value
  writeParsed(cache.dirs.at(-1) as string, key, value)
  return value
}
