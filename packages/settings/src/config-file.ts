// Configuration a folder supplies is read before anything is trusted, often before boot: a FIFO or a
// device named `.mcp.json` would block a plain read forever, and a huge file would be read whole. Every
// config file dsh reads (settings, trust record, project items) goes through this bounded read.
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs'
import { HarnessError } from '@dsh/kernel'

/** Larger than any real settings, MCP or hooks file. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024

/**
 * The text of a regular file of at most `limit` bytes. A missing file throws the usual ENOENT error
 * (callers treat it as absent); anything else that is not a regular file, or is too large, throws
 * `CONFIG_NOT_REGULAR` / `CONFIG_TOO_LARGE` without waiting on it.
 */
export function readConfigText(path: string, limit = MAX_CONFIG_BYTES): string {
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0))
  try {
    const stats = fstatSync(fd)
    if (!stats.isFile()) {
      throw new HarnessError(
        'CONFIG_NOT_REGULAR',
        `${path} is not a regular file (a FIFO, socket, device or directory): dsh does not read it; replace it with a regular file or remove it`,
        { file: path },
      )
    }
    if (stats.size > limit) {
      throw new HarnessError(
        'CONFIG_TOO_LARGE',
        `${path} is ${stats.size} bytes, over the ${limit}-byte limit for a configuration file: dsh does not read it`,
        { file: path, size: stats.size, limit },
      )
    }
    return readFileSync(fd, 'utf8')
  } finally {
    closeSync(fd)
  }
}
