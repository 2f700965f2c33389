// @dsh/world/fs/local: files on this machine. Every mutation of one file runs in a per-path critical
// section (in this process) and publishes through a temp file in the target's directory: rename for
// replacements, link for create-if-absent (so an existing file is never clobbered).
import { createHash, randomBytes } from 'node:crypto'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import { canonicalPath } from '../sandbox/index.js'
import {
  type DirEntry,
  type EditResult,
  type FileStat,
  type FileSystem,
  type FileVersion,
  type FsCallOptions,
  fsError,
  type GlobOptions,
  type GlobResult,
  type GrepMatch,
  type GrepOptions,
  type GrepResult,
  type LiteralEdit,
  type TextFile,
  type WriteMode,
  type WriteResult,
} from './index.js'
import { type FileIo, hashFile, localIo, readBounded } from './io.js'
import { globMatcher, relativeTo, walkFiles } from './walk.js'

export interface LocalFsConfig {
  /** The default for relative paths (not containment). Default: the process cwd. */
  cwd?: string
  /** Largest text file `readText` accepts without an explicit `maxBytes`. Default 10 MiB. */
  maxTextBytes?: number
}

const MAX_GREP_FILE_BYTES = 2 * 1024 * 1024
const DEFAULT_MAX_TEXT_BYTES = 10 * 1024 * 1024

const signalOf = (options: FsCallOptions) => (options.signal ? { signal: options.signal } : {})
const MAX_GREP_LINE = 400

export function versionOf(bytes: Uint8Array): FileVersion {
  return `${createHash('sha256').update(bytes).digest('hex').slice(0, 24)}-${bytes.length}` as FileVersion
}

const strict = new TextDecoder('utf-8', { fatal: true })

/** Decodes UTF-8 or throws `FS_NOT_TEXT` (NUL bytes count as binary). */
export function decodeText(bytes: Uint8Array, path: string): string {
  if (bytes.includes(0)) throw fsError('FS_NOT_TEXT', `${path} is a binary file (it contains NUL bytes)`, { path })
  try {
    return strict.decode(bytes)
  } catch {
    throw fsError('FS_NOT_TEXT', `${path} is not valid UTF-8 text`, { path })
  }
}

function ioError(error: unknown, path: string): HarnessError {
  if (HarnessError.is(error)) return error
  const code = (error as { code?: string }).code
  if (code === 'ENOENT') return fsError('FS_NOT_FOUND', `${path} does not exist`, { path })
  if (code === 'EISDIR') return fsError('FS_IS_DIRECTORY', `${path} is a directory`, { path })
  if (code === 'ENOTDIR') return fsError('FS_NOT_DIRECTORY', `a parent of ${path} is not a directory`, { path })
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return fsError('FS_IO', `${path}: permission denied (${code})`, { path, errno: code })
  }
  return fsError('FS_IO', `${path}: ${(error as Error).message}`, { path, errno: code ?? null })
}

function countOccurrences(text: string, needle: string): number {
  let count = 0
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++
  return count
}

/** Applies literal edits in order. Throws `FS_EDIT_*`. */
export function applyEdits(
  text: string,
  edits: readonly LiteralEdit[],
  path: string,
): { text: string; replacements: number } {
  if (edits.length === 0) throw fsError('FS_EDIT_INVALID', 'no edits given', { path })
  let replacements = 0
  for (const [index, edit] of edits.entries()) {
    if (edit.oldText === '') throw fsError('FS_EDIT_INVALID', 'oldText must not be empty', { path, index })
    if (edit.oldText === edit.newText) {
      throw fsError('FS_EDIT_INVALID', 'oldText and newText are identical: nothing would change', { path, index })
    }
    let oldText = edit.oldText
    let newText = edit.newText
    let count = countOccurrences(text, oldText)
    if (count === 0 && text.includes('\r\n') && !oldText.includes('\r\n')) {
      // The file uses CRLF; the model almost always writes LF.
      const crlf = oldText.replace(/\n/g, '\r\n')
      count = countOccurrences(text, crlf)
      if (count > 0) {
        oldText = crlf
        newText = newText.replace(/\r?\n/g, '\r\n')
      }
    }
    if (count === 0) throw fsError('FS_EDIT_NO_MATCH', `oldText not found in ${path}`, { path, index })
    if (count > 1 && !edit.replaceAll) {
      throw fsError('FS_EDIT_AMBIGUOUS', `oldText occurs ${count} times in ${path}`, { path, index, count })
    }
    text = edit.replaceAll ? text.split(oldText).join(newText) : text.replace(oldText, () => newText)
    replacements += edit.replaceAll ? count : 1
  }
  return { text, replacements }
}

export class LocalFs extends Service implements FileSystem {
  static readonly provide = 'fs'
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly locks = new Map<string, Promise<unknown>>()
  protected readonly config: LocalFsConfig
  /** The byte operations: node:fs here; another execution world passes its own (SSH: SFTP). */
  protected readonly io: FileIo

  constructor(ctx: Context, config: LocalFsConfig = {}, io: FileIo = localIo) {
    super(ctx, 'fs')
    this.config = config ?? {}
    this.io = io
  }

  resolvePath(path: string, options: FsCallOptions = {}): string {
    if (typeof path !== 'string' || path === '') throw fsError('FS_NOT_FOUND', 'empty path', { path: String(path) })
    const expanded = path === '~' || path.startsWith('~/') ? join(process.env.HOME ?? '/', path.slice(1)) : path
    return isAbsolute(expanded) ? resolve(expanded) : resolve(options.cwd ?? this.config.cwd ?? process.cwd(), expanded)
  }

  async readText(path: string, options: FsCallOptions & { maxBytes?: number } = {}): Promise<TextFile> {
    const abs = this.resolvePath(path, options)
    await this.readFence(abs, options)
    const max = options.maxBytes ?? this.config.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES
    try {
      const { bytes } = await readBounded(this.io, abs, max, { whole: true, ...signalOf(options) })
      return { path: abs, text: decodeText(bytes, abs), version: versionOf(bytes), size: bytes.length }
    } catch (error) {
      throw ioError(error, abs)
    }
  }

  async readBytes(path: string, options: FsCallOptions & { maxBytes: number }) {
    const abs = this.resolvePath(path, options)
    await this.readFence(abs, options)
    if (!Number.isInteger(options?.maxBytes) || options.maxBytes < 0) {
      throw new HarnessError('FS_READ_UNBOUNDED', 'readBytes needs an integer maxBytes >= 0', { path: abs })
    }
    try {
      const { bytes, size, complete } = await readBounded(this.io, abs, options.maxBytes, signalOf(options))
      return { bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), size, truncated: !complete }
    } catch (error) {
      throw ioError(error, abs)
    }
  }

  async stat(path: string, options: FsCallOptions = {}): Promise<FileStat | undefined> {
    const abs = this.resolvePath(path, options)
    try {
      const stats = await this.io.lstat(abs)
      return { path: abs, kind: stats.kind, size: stats.size, mtimeMs: stats.mtimeMs }
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return undefined
      throw ioError(error, abs)
    }
  }

  async list(path: string, options: FsCallOptions = {}): Promise<DirEntry[]> {
    const abs = this.resolvePath(path, options)
    try {
      const entries: DirEntry[] = await this.io.readdir(abs)
      return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    } catch (error) {
      throw ioError(error, abs)
    }
  }

  async version(path: string, options: FsCallOptions = {}): Promise<FileVersion | undefined> {
    const abs = this.resolvePath(path, options)
    try {
      return await hashFile(this.io, abs, options.signal)
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return undefined
      throw ioError(error, abs)
    }
  }

  async writeText(path: string, text: string, mode: WriteMode, options: FsCallOptions = {}): Promise<WriteResult> {
    const abs = this.resolvePath(path, options)
    const target = await this.fence(abs, options)
    return this.locked(target, async () => {
      const current = await this.current(target, options)
      if (mode.kind === 'createIfAbsent' && current) throw fsError('FS_EXISTS', `${abs} already exists`, { path: abs })
      if (mode.kind === 'replaceIfVersion') {
        const now = current ? current.version : null
        if (now !== mode.version) {
          throw fsError('FS_VERSION_CONFLICT', `${abs} changed since it was read`, {
            path: abs,
            expected: mode.version,
            actual: now,
          })
        }
      }
      const bytes = Buffer.from(text, 'utf8')
      await this.publish(abs, target, bytes, mode.kind === 'createIfAbsent' || !current, options)
      let previous: string | undefined
      if (current?.bytes) {
        try {
          previous = decodeText(current.bytes, abs)
        } catch {}
      }
      return {
        path: abs,
        version: versionOf(bytes),
        created: !current,
        ...(previous === undefined ? {} : { previous }),
      }
    })
  }

  async editText(
    path: string,
    edits: readonly LiteralEdit[],
    options: FsCallOptions & { expectedVersion?: FileVersion } = {},
  ): Promise<EditResult> {
    const abs = this.resolvePath(path, options)
    const target = await this.fence(abs, options)
    return this.locked(target, async () => {
      const current = await this.current(target, options)
      if (!current) throw fsError('FS_NOT_FOUND', `${abs} does not exist`, { path: abs })
      const max = this.config.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES
      if (!current.bytes)
        throw fsError('FS_TOO_LARGE', `${abs} is larger than the ${max} bytes an edit reads`, { path: abs, max })
      const version = current.version
      if (options.expectedVersion !== undefined && options.expectedVersion !== version) {
        throw fsError('FS_VERSION_CONFLICT', `${abs} changed since it was read`, {
          path: abs,
          expected: options.expectedVersion,
          actual: version,
        })
      }
      const before = decodeText(current.bytes, abs)
      const { text: after, replacements } = applyEdits(before, edits, abs)
      const bytes = Buffer.from(after, 'utf8')
      await this.publish(abs, target, bytes, false, options)
      return { path: abs, before, after, version: versionOf(bytes), replacements }
    })
  }

  async glob(pattern: string, options: GlobOptions = {}): Promise<GlobResult> {
    const root = this.resolvePath(options.cwd ?? '.', options)
    const limit = options.limit ?? 1000
    let match: (rel: string) => boolean
    try {
      match = globMatcher(pattern)
    } catch (error) {
      throw fsError('FS_INVALID_PATTERN', `invalid glob ${JSON.stringify(pattern)}: ${(error as Error).message}`, {
        pattern,
      })
    }
    const found: { rel: string; mtime: number }[] = []
    let truncated = false
    for await (const entry of walkFiles(root, options, this.io)) {
      if (!match(entry.rel)) continue
      if (found.length >= limit) {
        truncated = true
        break
      }
      const mtime = await this.io.stat(entry.abs).then(
        (s) => s.mtimeMs,
        () => 0,
      )
      found.push({ rel: entry.rel, mtime })
    }
    found.sort((a, b) => b.mtime - a.mtime || (a.rel < b.rel ? -1 : 1))
    return { paths: found.map((f) => f.rel), truncated }
  }

  async grep(pattern: string, path: string, options: GrepOptions = {}): Promise<GrepResult> {
    let regex: RegExp
    try {
      try {
        regex = new RegExp(pattern, options.ignoreCase ? 'iu' : 'u')
      } catch {
        // Models write escapes like `\-` that only the non-unicode syntax accepts.
        regex = new RegExp(pattern, options.ignoreCase ? 'i' : '')
      }
    } catch (error) {
      throw fsError(
        'FS_INVALID_PATTERN',
        `invalid regular expression ${JSON.stringify(pattern)}: ${(error as Error).message}`,
        {
          pattern,
        },
      )
    }
    const abs = this.resolvePath(path, options)
    const info = await this.stat(abs)
    if (!info) throw fsError('FS_NOT_FOUND', `${abs} does not exist`, { path: abs })
    if (info.kind !== 'directory') await this.readFence(abs, options)
    const include = options.include ? globMatcher(options.include) : undefined
    const limit = options.limit ?? 200
    const matches: GrepMatch[] = []
    let filesSearched = 0
    let truncated = false
    const files =
      info.kind === 'directory'
        ? walkFiles(abs, options, this.io)
        : (async function* () {
            yield { rel: basename(abs), abs }
          })()
    const base = info.kind === 'directory' ? abs : dirname(abs)
    outer: for await (const file of files) {
      if (include && !include(file.rel)) continue
      let bytes: Buffer
      try {
        // A hidden file inside the searched tree is skipped like an unreadable one.
        await this.readFence(file.abs, options)
        const s = await this.io.stat(file.abs)
        if (s.kind !== 'file' || s.size > MAX_GREP_FILE_BYTES) continue
        // Bounded again: the file may have changed (or become a FIFO) since the stat.
        bytes = (await readBounded(this.io, file.abs, MAX_GREP_FILE_BYTES, { whole: true, ...signalOf(options) })).bytes
      } catch {
        continue
      }
      if (bytes.subarray(0, 8192).includes(0)) continue
      filesSearched++
      const lines = bytes.toString('utf8').split('\n')
      for (const [index, line] of lines.entries()) {
        if (!regex.test(line)) continue
        if (matches.length >= limit) {
          truncated = true
          break outer
        }
        const text = line.length > MAX_GREP_LINE ? `${line.slice(0, MAX_GREP_LINE)}…` : line
        matches.push({ path: relativeTo(base, file.abs), line: index + 1, text: text.replace(/\r$/, '') })
      }
    }
    return { matches, truncated, filesSearched }
  }

  /**
   * The path a mutation of `abs` may write to. Local: `abs` itself. The sandbox provider checks the
   * policy here and returns the canonical target; it is called again right before publishing.
   */
  protected async fence(abs: string, _options: FsCallOptions): Promise<string> {
    return abs
  }

  /** Throws when the content of `abs` may not be read under the call's policy. Local: never. */
  protected async readFence(_abs: string, _options: FsCallOptions): Promise<void> {}

  /** The critical section a mutation of `target` runs in: one per canonical path. */
  protected async lockKey(target: string): Promise<string> {
    return canonicalPath(target)
  }

  /** Runs between staging the temp file and publishing it (a seam for tests and auditors). */
  protected async beforePublish(_abs: string, _target: string): Promise<void> {}

  /**
   * The version of the file a mutation replaces, with its bytes when they fit the text limit (a larger
   * file is hashed in chunks: it can be overwritten, not edited). `undefined` when there is none.
   */
  private async current(
    target: string,
    options: FsCallOptions,
  ): Promise<{ version: FileVersion; bytes?: Buffer } | undefined> {
    try {
      const max = this.config.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES
      const read = await readBounded(this.io, target, max, signalOf(options))
      if (read.complete) return { version: versionOf(read.bytes), bytes: read.bytes }
      return { version: await hashFile(this.io, target, options.signal) }
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return undefined
      throw ioError(error, target)
    }
  }

  private async publish(abs: string, target: string, bytes: Buffer, exclusive: boolean, options: FsCallOptions) {
    const dir = dirname(target)
    try {
      await this.io.mkdirp(dir)
    } catch (error) {
      throw ioError(error, dir)
    }
    const temp = join(dir, `.${basename(target)}.dsh-${randomBytes(6).toString('hex')}.tmp`)
    try {
      await this.io.writeNew(temp, bytes)
      const existing = await this.io.stat(target).catch(() => undefined)
      if (existing) await this.io.chmod(temp, existing.mode)
      await this.beforePublish(abs, target)
      const fresh = await this.fence(abs, options)
      if (fresh !== target) {
        throw fsError(
          'FS_VERSION_CONFLICT',
          `${abs} now resolves to ${fresh} (a link changed during the write); retry`,
          {
            path: abs,
            expected: target,
            actual: fresh,
          },
        )
      }
      if (exclusive) {
        await this.io.link(temp, target).catch((error) => {
          if ((error as { code?: string }).code === 'EEXIST')
            throw fsError('FS_EXISTS', `${abs} already exists`, { path: abs })
          throw error
        })
        await this.io.unlink(temp)
      } else {
        await this.io.rename(temp, target)
      }
    } catch (error) {
      await this.io.unlink(temp).catch(() => {})
      throw ioError(error, abs)
    }
  }

  private async locked<T>(target: string, body: () => Promise<T>): Promise<T> {
    const key = await this.lockKey(target)
    const previous = this.locks.get(key) ?? Promise.resolve()
    const run = previous.then(body, body)
    const tail = run.catch(() => {})
    this.locks.set(key, tail)
    try {
      return await run
    } finally {
      if (this.locks.get(key) === tail) this.locks.delete(key)
    }
  }
}

export default LocalFs
