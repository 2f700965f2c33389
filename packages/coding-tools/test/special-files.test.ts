// The model cannot exhaust the host through a file path (issue 34): `read` (and grep, write) of a
// character device, a FIFO or a socket returns promptly with FS_NOT_REGULAR instead of growing
// without end (/dev/zero, /dev/urandom) or hanging in open (a FIFO nobody writes to); a file over the
// size limit is refused before it is read; a /proc file that stats as 0 bytes is read for real.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createWorld, textOf } from './harness.js'

/** Each call must come back well within this; the old code hung or grew for minutes. */
const PROMPT_MS = 3_000

async function promptly<T>(promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${PROMPT_MS} ms`)), PROMPT_MS)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

describe('reads of files that are not regular files', () => {
  it.each(['/dev/zero', '/dev/urandom'])('read of %s is refused at once', async (device) => {
    await using world = await createWorld({ mode: 'danger-full-access' })
    const result = await promptly(world.call('read', { path: device }))
    expect(result).toMatchObject({ isError: true, errorCode: 'FS_NOT_REGULAR' })
    expect(textOf(result)).toContain('character device')
  })

  it('read, grep and write of a FIFO nobody writes to return at once', async () => {
    await using world = await createWorld()
    const fifo = join(world.ws, 'pipe')
    execFileSync('mkfifo', [fifo])
    const read = await promptly(world.call('read', { path: 'pipe' }))
    expect(read).toMatchObject({ isError: true, errorCode: 'FS_NOT_REGULAR' })
    expect(textOf(read)).toContain('FIFO')
    // A FIFO as .gitignore was opened by every directory walk (glob, grep).
    execFileSync('mkfifo', [join(world.ws, '.gitignore')])
    writeFileSync(join(world.ws, 'a.txt'), 'needle\n')
    const grep = await promptly(world.call('grep', { pattern: 'needle' }))
    expect(textOf(grep)).toContain('a.txt:1:')
    const write = await promptly(world.call('write', { path: 'pipe', content: 'x' }))
    expect(write).toMatchObject({ isError: true, errorCode: 'FS_NOT_REGULAR' })
  })

  it('read of a unix socket is refused', async () => {
    await using world = await createWorld()
    const path = join(world.ws, 'sock')
    const server: Server = createServer()
    await new Promise<void>((resolve) => server.listen(path, resolve))
    try {
      const result = await promptly(world.call('read', { path: 'sock' }))
      expect(result).toMatchObject({ isError: true, errorCode: 'FS_NOT_REGULAR' })
      expect(textOf(result)).toContain('socket')
    } finally {
      server.close()
    }
  })

  it('a /proc file that stats as 0 bytes is read for real, and a huge sparse file is refused unread', async () => {
    await using world = await createWorld({ mode: 'danger-full-access' })
    const status = await promptly(world.call('read', { path: '/proc/self/status' }))
    expect(status.isError).toBe(false)
    expect(textOf(status)).toMatch(/Name:\s/)
    // 4 GiB of holes: refused by its size before a byte is read.
    execFileSync('truncate', ['-s', '4G', join(world.ws, 'big')])
    const big = await promptly(world.call('read', { path: 'big' }))
    expect(big).toMatchObject({ isError: true, errorCode: 'FS_TOO_LARGE' })
  })
})
