// The byte-level file operations the fs providers are built on. `localIo` is node:fs on this
// machine; another execution world (SSH) supplies its own, and the versioning, fence, literal edit
// and walk logic above it stay the same. Failures carry a Node-style `code` (ENOENT, EEXIST, EACCES...).
//
// Content is read only through `openRead`, which refuses anything but a regular file, and only in
// bounded chunks (`readBounded`, `hashFile`): a path the model names can be /dev/zero (endless), a
// FIFO (an open that never returns) or a /proc file that stats as 0 bytes but has content, so no
// read trusts the size or allocates before it knows the bytes fit (issue 34, decision 420).

import { createHash } from 'node:crypto'
import { constants, type Stats } from 'node:fs'
import { chmod, link, lstat, mkdir, open, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { type FileStat, type FileVersion, fsError } from './index.js'

export interface IoStats {
  kind: FileStat['kind']
  size: number
  mtimeMs: number
  /** Permission bits (`mode & 0o7777`). */
  mode: number
}

export interface FileIo {
  /** Follows symlinks. */
  stat(path: string): Promise<IoStats>
  /** Does not follow a final symlink. */
  lstat(path: string): Promise<IoStats>
  /**
   * Opens a regular file (following symlinks) for reading from its start. Anything else is refused
   * with `FS_NOT_REGULAR` (`FS_IS_DIRECTORY` for a directory), checked before the open (a device is
   * never opened) and again on the open file (a path swapped in between); the open never blocks.
   */
  openRead(path: string): Promise<FileReader>
  /** Entries (unsorted) with their kind; a symlink is reported as `symlink`. */
  readdir(path: string): Promise<{ name: string; kind: FileStat['kind'] }[]>
  mkdirp(path: string): Promise<void>
  /** Creates `path` (EEXIST when it exists) holding `bytes`. */
  writeNew(path: string, bytes: Buffer): Promise<void>
  chmod(path: string, mode: number): Promise<void>
  /** A hard link `to` of `from`; EEXIST when `to` exists. */
  link(from: string, to: string): Promise<void>
  /** Replaces `to` atomically. */
  rename(from: string, to: string): Promise<void>
  unlink(path: string): Promise<void>
}

/** An open regular file, read front to back. */
export interface FileReader {
  /** The size the open file reports: 0 for /proc-style files whose content is real. */
  readonly size: number
  /** Up to `maxBytes` next bytes; empty at the end of the file. */
  read(maxBytes: number): Promise<Buffer>
  close(): Promise<void>
}

/** What a non-regular file is, in words, for the refusal (`undefined`: a regular file). */
export function specialKind(
  stats: Pick<Stats, 'isCharacterDevice' | 'isBlockDevice' | 'isFIFO' | 'isSocket' | 'isFile'>,
) {
  if (stats.isFile()) return undefined
  if (stats.isCharacterDevice()) return 'a character device'
  if (stats.isBlockDevice()) return 'a block device'
  if (stats.isFIFO()) return 'a FIFO (named pipe)'
  if (stats.isSocket()) return 'a socket'
  return 'not a regular file'
}

/** Throws unless `stats` is a regular file (the one check every `openRead` makes, twice). */
export function requireRegular(
  path: string,
  stats: Pick<Stats, 'isCharacterDevice' | 'isBlockDevice' | 'isFIFO' | 'isSocket' | 'isFile' | 'isDirectory'>,
): void {
  if (stats.isDirectory()) throw fsError('FS_IS_DIRECTORY', `${path} is a directory`, { path })
  const kind = specialKind(stats)
  if (kind === undefined) return
  throw fsError(
    'FS_NOT_REGULAR',
    `${path} is ${kind}, not a regular file: dsh reads only regular files (a device or pipe can be endless or never answer); use bash (e.g. head -c 4096 ${path}) if you really need its bytes`,
    { path, kind },
  )
}

/** Bytes per read call: what one chunk may allocate. */
const CHUNK_BYTES = 1024 * 1024
const SMALL_BYTES = 64 * 1024

export interface BoundedRead {
  bytes: Buffer
  /** The file's size when known: the bytes read if the end was reached, else at least `bytes + 1`. */
  size: number
  /** Whether the end of the file was reached within `maxBytes`. */
  complete: boolean
}

/**
 * At most `maxBytes` of a regular file, read in chunks; one byte past the limit is probed so
 * `complete` is exact even for a file whose size is not reported. `whole`: a file over the limit is
 * refused with `FS_TOO_LARGE` (by its reported size before a byte is read, or when the probe finds more).
 */
export async function readBounded(
  io: FileIo,
  path: string,
  maxBytes: number,
  options: { whole?: boolean; signal?: AbortSignal } = {},
): Promise<BoundedRead> {
  const tooLarge = (size: string) =>
    fsError('FS_TOO_LARGE', `${path} has ${size} bytes, more than the ${maxBytes} allowed`, { path, max: maxBytes })
  const reader = await io.openRead(path)
  try {
    if (options.whole && reader.size > maxBytes) throw tooLarge(String(reader.size))
    const chunks: Buffer[] = []
    let got = 0
    // The first read asks for the reported size and one byte more (one allocation for most files); a
    // file that reports 0 (/proc) or ends short continues in small reads, a growing one in chunks.
    let want = reader.size > 0 ? reader.size + 1 : SMALL_BYTES
    while (got < maxBytes) {
      options.signal?.throwIfAborted()
      const asked = Math.min(want, maxBytes - got)
      const chunk = await reader.read(asked)
      if (chunk.length === 0) return { bytes: Buffer.concat(chunks, got), size: got, complete: true }
      chunks.push(chunk)
      got += chunk.length
      want = chunk.length < asked ? SMALL_BYTES : CHUNK_BYTES
    }
    const more = (await reader.read(1)).length > 0
    if (more && options.whole) throw tooLarge(`more than ${maxBytes}`)
    const bytes = Buffer.concat(chunks, got)
    return more
      ? { bytes, size: Math.max(reader.size, got + 1), complete: false }
      : { bytes, size: got, complete: true }
  } finally {
    await reader.close().catch(() => {})
  }
}

/**
 * The version of a regular file of any size, hashed chunk by chunk (nothing is kept). Equal to
 * `versionOf` of its bytes. A regular file is finite, so this ends; `signal` can stop it sooner.
 */
export async function hashFile(io: FileIo, path: string, signal?: AbortSignal): Promise<FileVersion> {
  const reader = await io.openRead(path)
  try {
    const hash = createHash('sha256')
    let size = 0
    for (;;) {
      signal?.throwIfAborted()
      const chunk = await reader.read(CHUNK_BYTES)
      if (chunk.length === 0) break
      hash.update(chunk)
      size += chunk.length
    }
    return `${hash.digest('hex').slice(0, 24)}-${size}` as FileVersion
  } finally {
    await reader.close().catch(() => {})
  }
}

function statsOf(s: import('node:fs').Stats): IoStats {
  const kind = s.isFile() ? 'file' : s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : 'other'
  return { kind, size: s.size, mtimeMs: s.mtimeMs, mode: s.mode & 0o7777 }
}

/** node:fs on this machine. */
export const localIo: FileIo = {
  stat: async (path) => statsOf(await stat(path)),
  lstat: async (path) => statsOf(await lstat(path)),
  async openRead(path) {
    requireRegular(path, await stat(path))
    // O_NONBLOCK: should a FIFO be swapped in after the stat, the open returns instead of waiting for
    // a writer (and the fstat below refuses it). On a regular file the flag changes nothing.
    const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0))
    let size: number
    try {
      const now = await handle.stat()
      requireRegular(path, now)
      size = now.size
    } catch (error) {
      await handle.close().catch(() => {})
      throw error
    }
    return {
      size,
      async read(maxBytes) {
        const buffer = Buffer.allocUnsafe(maxBytes)
        const { bytesRead } = await handle.read(buffer, 0, maxBytes, null)
        return bytesRead === maxBytes ? buffer : buffer.subarray(0, bytesRead)
      },
      close: () => handle.close(),
    }
  },
  async readdir(path) {
    const entries = await readdir(path, { withFileTypes: true })
    return entries.map((entry) => ({
      name: entry.name,
      kind: entry.isFile()
        ? 'file'
        : entry.isDirectory()
          ? 'directory'
          : entry.isSymbolicLink()
            ? 'symlink'
            : ('other' as FileStat['kind']),
    }))
  },
  mkdirp: async (path) => void (await mkdir(path, { recursive: true })),
  writeNew: (path, bytes) => writeFile(path, bytes, { flag: 'wx', mode: 0o666 }),
  chmod: (path, mode) => chmod(path, mode),
  link: (from, to) => link(from, to),
  rename: (from, to) => rename(from, to),
  unlink: (path) => unlink(path),
}
