// The record of trusted folders, `$DSH_HOME/trust.json`: per folder (its real path), the content hash
// of each gated item as it was when the user trusted it. An item is admitted only while its content
// still has that hash, so an edited `.mcp.json` or a preset the model wrote mid-session asks again.
import { createHash, randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, readlinkSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import { readChunks, readConfigText } from '../config-file.js'
import { listFiles, projectConfigItems, type TrustItem } from './items.js'

export interface FolderRecord {
  trustedAt: string
  /** Item path (relative to the folder) to the hash of its content when trusted. */
  items: Record<string, string>
}

interface TrustFile {
  version: 1
  folders: Record<string, FolderRecord>
}

/** A gated item and whether this folder's trust covers it as it is now. */
export interface ItemState extends TrustItem {
  admitted: boolean
}

export interface FolderTrustOptions {
  /**
   * `--trust`: this process trusts `cwd` as it is now, recording nothing. Taken when the record is
   * made (at boot), so what the model writes later in the run is not covered.
   */
  assume?: boolean
  /** The folder `assume` covers. Default: the process's working directory. */
  cwd?: string
}

export class FolderTrust {
  readonly file: string
  private cached: { mtimeMs: number; size: number; data: TrustFile } | undefined
  /** `--trust`: the folder and its items' hashes when this record was made. */
  private readonly snapshot: { key: string; items: Record<string, string> } | undefined

  constructor(
    readonly home: string,
    private readonly options: FolderTrustOptions = {},
  ) {
    this.file = join(home, 'trust.json')
    if (options.assume) {
      const folder = options.cwd ?? process.cwd()
      this.snapshot = { key: folderKey(folder), items: hashItems(folder) }
    }
  }

  get assumed(): boolean {
    return this.options.assume === true
  }

  /** Whether the item at `path` (relative to `folder`) may load: trusted with this very content. */
  admits(folder: string, path: string): boolean {
    const key = folderKey(folder)
    const recorded = this.snapshot?.key === key ? this.snapshot.items[path] : this.record(folder)?.items[path]
    return recorded !== undefined && recorded === contentHash(join(folder, path))
  }

  /** The folder's record, if it was ever trusted. */
  record(folder: string): FolderRecord | undefined {
    return this.lookup().folders[folderKey(folder)]
  }

  /** The gated items of `folder` with whether each is admitted now. */
  status(folder: string): ItemState[] {
    return projectConfigItems(folder).map((item) => ({ ...item, admitted: this.admits(folder, item.path) }))
  }

  /** The gated items of `folder` that would not load. */
  pending(folder: string): TrustItem[] {
    return this.status(folder)
      .filter((item) => !item.admitted)
      .map(({ admitted: _, ...item }) => item)
  }

  /** Trusts `folder` as it is now: records the hash of every gated item present. */
  grant(folder: string): FolderRecord {
    const record: FolderRecord = { trustedAt: new Date().toISOString(), items: hashItems(folder) }
    const data = this.read()
    this.write({ ...data, folders: { ...data.folders, [folderKey(folder)]: record } })
    return record
  }

  /**
   * Trusts `folder` (a worktree dsh made of `source`) for exactly the items whose content is what the
   * user trusted in `source`: a worktree starts from the committed files, so an item that differs there
   * (or that the user never trusted) stays pending. Returns the paths admitted; records nothing when
   * `source` is not trusted.
   */
  inherit(source: string, folder: string): string[] {
    const trusted = this.record(source)
    if (!trusted) return []
    const items: Record<string, string> = {}
    for (const [path, hash] of Object.entries(hashItems(folder))) if (trusted.items[path] === hash) items[path] = hash
    const record: FolderRecord = { trustedAt: new Date().toISOString(), items }
    const data = this.read()
    this.write({ ...data, folders: { ...data.folders, [folderKey(folder)]: record } })
    return Object.keys(items)
  }

  /** Records the current content of one item of a trusted folder (the user's own edit through dsh). */
  update(folder: string, path: string): void {
    const data = this.read()
    const key = folderKey(folder)
    const record = data.folders[key]
    if (!record) return
    const hash = contentHash(join(folder, path))
    const items = { ...record.items }
    if (hash) items[path] = hash
    else delete items[path]
    this.write({ ...data, folders: { ...data.folders, [key]: { ...record, items } } })
  }

  /** Forgets `folder`; returns whether it was trusted. */
  revoke(folder: string): boolean {
    const data = this.read()
    const key = folderKey(folder)
    if (!data.folders[key]) return false
    const folders = { ...data.folders }
    delete folders[key]
    this.write({ ...data, folders })
    return true
  }

  /** Every trusted folder. */
  folders(): Array<{ folder: string } & FolderRecord> {
    return Object.entries(this.lookup().folders).map(([folder, record]) => ({ folder, ...record }))
  }

  /**
   * Why the record cannot be read, when it cannot: lookups then trust nothing (failing closed costs the
   * user one `dsh trust`), and the surfaces show this message with the fix.
   */
  get damaged(): string | undefined {
    try {
      this.read()
      return undefined
    } catch (error) {
      return (error as Error).message
    }
  }

  /** The record for a lookup: a damaged file reads as no folder trusted (writes still refuse it). */
  private lookup(): TrustFile {
    try {
      return this.read()
    } catch {
      return { version: 1, folders: {} }
    }
  }

  private read(): TrustFile {
    const stats = statSync(this.file, { throwIfNoEntry: false })
    if (!stats) return { version: 1, folders: {} }
    if (this.cached && this.cached.mtimeMs === stats.mtimeMs && this.cached.size === stats.size) return this.cached.data
    let data: TrustFile
    try {
      const parsed = JSON.parse(readConfigText(this.file)) as Partial<TrustFile>
      if (!parsed || typeof parsed.folders !== 'object' || parsed.folders === null)
        throw new Error('no "folders" object')
      data = { version: 1, folders: parsed.folders }
    } catch (error) {
      throw new HarnessError(
        'TRUST_FILE_INVALID',
        `${this.file} is not a valid trust record (${(error as Error).message}); delete it and trust your folders again with \`dsh trust\``,
        { file: this.file },
      )
    }
    this.cached = { mtimeMs: stats.mtimeMs, size: stats.size, data }
    return data
  }

  private write(data: TrustFile): void {
    mkdirSync(this.home, { recursive: true, mode: 0o700 })
    const temp = `${this.file}.${randomBytes(6).toString('hex')}.tmp`
    writeFileSync(temp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 })
    chmodSync(temp, 0o600)
    renameSync(temp, this.file)
    this.cached = undefined
  }
}

/** The hash of every gated item of `folder` as it is now. */
function hashItems(folder: string): Record<string, string> {
  const items: Record<string, string> = {}
  for (const item of projectConfigItems(folder)) {
    const hash = contentHash(join(folder, item.path))
    if (hash) items[item.path] = hash
  }
  return items
}

/** The key a folder is recorded under: its real path, so a symlinked path finds the same record. */
export function folderKey(folder: string): string {
  try {
    return realpathSync(folder)
  } catch {
    return resolve(folder)
  }
}

// Keyed by ctime too: a process can put mtime back after an edit of the same size, not ctime.
const fileHashes = new Map<string, { stamp: string; hash: string }>()

/**
 * The content hash of a file, or of a directory (every file below it with its relative path, links
 * by their target); undefined when nothing is there.
 */
export function contentHash(path: string): string | undefined {
  const stats = statSync(path, { throwIfNoEntry: false })
  if (!stats) return undefined
  if (!stats.isDirectory()) return fileHash(path)
  const outer = createHash('sha256')
  for (const rel of listFiles(path)) {
    const full = join(path, rel)
    let link: string | undefined
    try {
      link = readlinkSync(full)
    } catch {
      link = undefined
    }
    outer.update(`${rel}\0${link !== undefined ? `link:${link}` : (fileHash(full) ?? 'unreadable')}\n`)
  }
  return `sha256:${outer.digest('hex')}`
}

function fileHash(path: string): string | undefined {
  const stats = statSync(path, { throwIfNoEntry: false })
  if (!stats?.isFile()) return stats ? `special:${stats.mode}` : undefined
  const stamp = `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
  const cached = fileHashes.get(path)
  if (cached?.stamp === stamp) return cached.hash
  // Chunk by chunk: a large file in a skill's folder is hashed without being held in memory.
  const digest = createHash('sha256')
  try {
    readChunks(path, (chunk) => digest.update(chunk))
  } catch {
    return 'unreadable' // replaced by a FIFO, a device or nothing since the stat
  }
  const hash = `sha256:${digest.digest('hex')}`
  fileHashes.set(path, { stamp, hash })
  return hash
}
