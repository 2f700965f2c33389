// The two settings files: read synchronously (values are needed inside synchronous calls such as
// `ctx.llm.prepareCall`) and cached by modification time and size; written through the `yaml`
// Document API so comments and key order survive, to a temp file that is renamed over the old one.
import { randomBytes } from 'node:crypto'
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import type { Document } from 'yaml'
import { readConfigText } from './config-file.js'

// yaml is loaded on first use so that commands which never read settings do not pay for it.
const require = createRequire(import.meta.url)
const loadYaml = (): typeof import('yaml') => require('yaml')

/** One file's parsed content: top-level keys to plain values. */
export type FileValues = Readonly<Record<string, unknown>>

interface Cached {
  mtimeMs: number
  size: number
  values: FileValues
}

/** Reads `settings.yaml` files, re-parsing only when a file changed. */
export class SettingsFiles {
  private readonly _cache = new Map<string, Cached>()

  /** The file's top-level values; `{}` when it does not exist. Throws `CONFIG_SETTINGS_INVALID` for bad YAML. */
  read(path: string): FileValues {
    let stats: { mtimeMs: number; size: number } | undefined
    try {
      // Read on every settings lookup; a missing file (the usual project case) must not cost an exception.
      stats = statSync(path, { throwIfNoEntry: false })
    } catch (error) {
      throw unreadable(path, error)
    }
    if (!stats) return {}
    const cached = this._cache.get(path)
    if (cached && cached.mtimeMs === stats.mtimeMs && cached.size === stats.size) return cached.values
    const values = toValues(path, parseFile(path))
    this._cache.set(path, { mtimeMs: stats.mtimeMs, size: stats.size, values })
    return values
  }

  /**
   * Applies `edit` to the file's document and writes it back atomically. `edit` may throw to abandon the
   * change (nothing is written). Creates the file and its directory when missing. `private` (the user's
   * file in `$DSH_HOME`): the file is written 0600, each time, and a directory it creates 0700.
   */
  update(path: string, edit: (document: Document) => void, options: { private?: boolean } = {}): void {
    const document = parseFile(path) ?? new (loadYaml().Document)({})
    edit(document)
    mkdirSync(dirname(path), { recursive: true, ...(options.private ? { mode: 0o700 } : {}) })
    const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    try {
      // The temp file is new (`wx`), so the mode holds for a rewrite too: the rename replaces the old inode.
      writeFileSync(temp, document.toString(), { flag: 'wx', ...(options.private ? { mode: 0o600 } : {}) })
      renameSync(temp, path)
    } catch (error) {
      rmSync(temp, { force: true })
      throw error
    }
    this._cache.delete(path)
  }
}

function unreadable(path: string, error: unknown): HarnessError {
  const errno = (error as NodeJS.ErrnoException).code ?? null
  return new HarnessError('CONFIG_SETTINGS_UNREADABLE', `cannot read ${path}: ${errno}`, { file: path, errno })
}

/** The file as a YAML document, or undefined when it does not exist. */
function parseFile(path: string): Document | undefined {
  let text: string
  try {
    text = readConfigText(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    if (error instanceof HarnessError) throw error
    throw unreadable(path, error)
  }
  const document = loadYaml().parseDocument(text, { prettyErrors: true })
  if (document.errors.length > 0) {
    const lines = document.errors.map((error) => `  ${error.message.split('\n')[0]}`)
    throw new HarnessError('CONFIG_SETTINGS_INVALID', `${path} is not valid YAML:\n${lines.join('\n')}`, {
      file: path,
    })
  }
  return document
}

function toValues(path: string, document: Document | undefined): FileValues {
  const data: unknown = document?.toJS()
  if (data === null || data === undefined) return {}
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new HarnessError('CONFIG_SETTINGS_INVALID', `${path} must be a map of setting keys to values`, {
      file: path,
    })
  }
  return Object.freeze({ ...(data as Record<string, unknown>) })
}
