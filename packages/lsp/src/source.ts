// Files the language tools read themselves (outside ctx.fs): the text sent to a server and the lines
// shown beside locations. Bounded and regular-only like every other read (issue 34).
import { localIo, readBounded } from '@dsh/world/fs/io'

/** Bound of a file sent to a language server (larger ones are refused with FS_TOO_LARGE). */
export const MAX_SOURCE_BYTES = 16 * 1024 * 1024

/**
 * A source file's text: regular files only (a FIFO or device is refused with FS_NOT_REGULAR without
 * waiting), at most MAX_SOURCE_BYTES, read in chunks.
 */
export async function readSourceText(file: string): Promise<string> {
  return (await readBounded(localIo, file, MAX_SOURCE_BYTES, { whole: true })).bytes.toString('utf8')
}
