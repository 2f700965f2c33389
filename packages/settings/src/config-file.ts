// Files a folder supplies are read before anything is trusted, often before boot: a FIFO or a device
// named `.mcp.json`, `AGENTS.md` or `SKILL.md` would block a plain read forever, and a huge file would
// be read whole. Every such file dsh reads itself (settings, trust record, project items, project
// instructions, skills, presets) goes through these bounded reads of regular files.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats, statSync } from 'node:fs'
import { HarnessError } from '@dsh/kernel'

/** Larger than any real settings, MCP or hooks file. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024

const CHUNK_BYTES = 64 * 1024

function notRegular(path: string): HarnessError {
  return new HarnessError(
    'CONFIG_NOT_REGULAR',
    `${path} is not a regular file (a FIFO, socket, device or directory): dsh does not read it; replace it with a regular file or remove it`,
    { file: path },
  )
}

/**
 * Opens a regular file for reading, or throws `CONFIG_NOT_REGULAR` without waiting: a stat first (a
 * device is never opened), then an fstat of what was opened (a path swapped in between). A missing
 * file throws the usual ENOENT error.
 */
function openRegular(path: string): { fd: number; stats: Stats } {
  if (!statSync(path).isFile()) throw notRegular(path)
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0))
  const stats = fstatSync(fd)
  if (!stats.isFile()) {
    closeSync(fd)
    throw notRegular(path)
  }
  return { fd, stats }
}

/** Up to `limit + 1` bytes of `fd`, in chunks (the reported size is not trusted: /proc files say 0). */
function readUpTo(fd: number, limit: number): Buffer {
  const chunks: Buffer[] = []
  let total = 0
  while (total <= limit) {
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, limit + 1 - total))
    const read = readSync(fd, chunk, 0, chunk.length, null)
    if (read === 0) break
    chunks.push(chunk.subarray(0, read))
    total += read
  }
  return Buffer.concat(chunks, total)
}

/**
 * The text of a regular file of at most `limit` bytes. A missing file throws the usual ENOENT error
 * (callers treat it as absent); anything else that is not a regular file, or is too large, throws
 * `CONFIG_NOT_REGULAR` / `CONFIG_TOO_LARGE` without waiting on it or reading it whole.
 */
export function readConfigText(path: string, limit = MAX_CONFIG_BYTES): string {
  const { fd, stats } = openRegular(path)
  try {
    const tooLarge = (size: number) =>
      new HarnessError(
        'CONFIG_TOO_LARGE',
        `${path} is ${size} bytes, over the ${limit}-byte limit for this file: dsh does not read it`,
        { file: path, size, limit },
      )
    if (stats.size > limit) throw tooLarge(stats.size)
    const bytes = readUpTo(fd, limit)
    if (bytes.length > limit) throw tooLarge(bytes.length)
    return bytes.toString('utf8')
  } finally {
    closeSync(fd)
  }
}

/**
 * The first `limit` bytes of a regular file as text, and whether there was more (`size` is the file's
 * size as far as known). Refuses what is not a regular file as `readConfigText` does; never reads more
 * than `limit + 1` bytes.
 */
export function readTextHead(path: string, limit: number): { text: string; truncated: boolean; size: number } {
  const { fd, stats } = openRegular(path)
  try {
    const bytes = readUpTo(fd, limit)
    const truncated = bytes.length > limit
    return {
      text: bytes.subarray(0, limit).toString('utf8'),
      truncated,
      size: Math.max(stats.size, bytes.length),
    }
  } finally {
    closeSync(fd)
  }
}

/** Calls `update` with a regular file's bytes chunk by chunk (hashing a file of any size). */
export function readChunks(path: string, update: (chunk: Buffer) => void): void {
  const { fd } = openRegular(path)
  try {
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES)
    for (;;) {
      const read = readSync(fd, chunk, 0, chunk.length, null)
      if (read === 0) break
      update(chunk.subarray(0, read))
    }
  } finally {
    closeSync(fd)
  }
}
