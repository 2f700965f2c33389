// The byte-level file operations the fs providers are built on. `localIo` is node:fs on this
// machine; another execution world (SSH) supplies its own, and the versioning, fence, literal edit
// and walk logic above it stay the same. Failures carry a Node-style `code` (ENOENT, EEXIST, EACCES...).
import { constants } from 'node:fs'
import { chmod, link, lstat, mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises'
import type { FileStat } from './index.js'

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
  readFile(path: string): Promise<Buffer>
  /** The first `maxBytes` bytes and the file's size. */
  readHead(path: string, maxBytes: number): Promise<{ bytes: Buffer; size: number }>
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

function statsOf(s: import('node:fs').Stats): IoStats {
  const kind = s.isFile() ? 'file' : s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : 'other'
  return { kind, size: s.size, mtimeMs: s.mtimeMs, mode: s.mode & 0o7777 }
}

/** node:fs on this machine. */
export const localIo: FileIo = {
  stat: async (path) => statsOf(await stat(path)),
  lstat: async (path) => statsOf(await lstat(path)),
  readFile: (path) => readFile(path),
  async readHead(path, maxBytes) {
    const handle = await open(path, constants.O_RDONLY)
    try {
      const { size } = await handle.stat()
      const buffer = Buffer.alloc(Math.min(size, maxBytes))
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
      return { bytes: buffer.subarray(0, bytesRead), size }
    } finally {
      await handle.close()
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
