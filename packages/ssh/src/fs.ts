// @dsh/ssh/fs: `ctx.fs` on the remote machine. The same provider as `@dsh/world/fs/sandbox` (versions,
// per-path critical sections, temp file + rename/link publish, literal edits, the policy's mutation
// fence, the secret-path read fence, glob/grep over .gitignore) with its byte operations done over
// the connection's SFTP session and paths canonicalized by the remote `realpath`.
import { posix } from 'node:path'
import type { Context } from '@dsh/kernel'
import { type FileIo, type IoStats, requireRegular } from '@dsh/world/fs/io'
import type { LocalFsConfig } from '@dsh/world/fs/local'
import SandboxFs from '@dsh/world/fs/sandbox'
import type { SFTPWrapper, Stats } from 'ssh2'
import type { SshConnection } from './index.js'

const SFTP_CODES: Record<number, string> = { 2: 'ENOENT', 3: 'EACCES', 4: 'EIO' }

/** An SFTP failure with the Node-style `code` the fs providers map to FS_* errors. */
function sftpError(error: Error & { code?: unknown }, path: string): Error {
  const code = typeof error.code === 'number' ? (SFTP_CODES[error.code] ?? 'EIO') : error.code
  return Object.assign(new Error(`${path}: ${error.message}`), { code })
}

function kindOf(stats: Stats): IoStats['kind'] {
  if (stats.isFile()) return 'file'
  if (stats.isDirectory()) return 'directory'
  if (stats.isSymbolicLink()) return 'symlink'
  return 'other'
}

const toStats = (stats: Stats): IoStats => ({
  kind: kindOf(stats),
  size: stats.size,
  mtimeMs: stats.mtime * 1000,
  mode: stats.mode & 0o7777,
})

/** Calls an SFTP method in promise form, mapping its error. */
function call<T>(path: string, body: (done: (error: Error | null | undefined, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) =>
    body((error, value) =>
      error ? reject(sftpError(error as Error & { code?: unknown }, path)) : resolve(value as T),
    ),
  )
}

/** The fs byte operations over one SFTP session. */
export function sftpIo(session: () => Promise<SFTPWrapper>): FileIo {
  const io: FileIo = {
    stat: async (path) => toStats(await call<Stats>(path, async (done) => (await session()).stat(path, done))),
    lstat: async (path) => toStats(await call<Stats>(path, async (done) => (await session()).lstat(path, done))),
    async openRead(path) {
      const sftp = await session()
      // Stat first: SFTP servers serve one request at a time, and an open of a remote FIFO would hang
      // the whole session (SFTP has no O_NONBLOCK); the fstat after the open catches a swap.
      requireRegular(path, await call<Stats>(path, (done) => sftp.stat(path, done)))
      const handle = await call<Buffer>(path, (done) => sftp.open(path, 'r', done))
      let size: number
      try {
        const now = await call<Stats>(path, (done) => sftp.fstat(handle, done))
        requireRegular(path, now)
        size = now.size
      } catch (error) {
        await call(path, (done) => sftp.close(handle, done)).catch(() => {})
        throw error
      }
      let position = 0
      return {
        size,
        async read(maxBytes) {
          const buffer = Buffer.allocUnsafe(maxBytes)
          let read = 0
          // One SFTP read returns at most the server's packet size: fill the buffer or reach the end.
          while (read < maxBytes) {
            const n = await call<number>(path, (done) =>
              // ssh2 answers the end of the file with 0 bytes.
              sftp.read(handle, buffer, read, maxBytes - read, position, (error, bytes) => done(error, bytes)),
            )
            if (n === 0) break
            read += n
            position += n
          }
          return buffer.subarray(0, read)
        },
        close: () => call(path, (done) => sftp.close(handle, done)).then(() => {}),
      }
    },
    async readdir(path) {
      const sftp = await session()
      const entries = await call<{ filename: string; attrs: Stats }[]>(path, (done) => sftp.readdir(path, done))
      return entries.map((entry) => ({ name: entry.filename, kind: kindOf(entry.attrs) }))
    },
    async mkdirp(path) {
      const sftp = await session()
      const missing: string[] = []
      for (let dir = path; ; dir = posix.dirname(dir)) {
        const exists = await call<Stats>(dir, (done) => sftp.stat(dir, done)).then(
          () => true,
          () => false,
        )
        if (exists || dir === '/') break
        missing.unshift(dir)
      }
      for (const dir of missing) {
        await call(dir, (done) => sftp.mkdir(dir, done)).catch(async (error) => {
          // Created meanwhile by someone else: fine.
          if (!(await io.stat(dir).catch(() => undefined))) throw error
        })
      }
    },
    writeNew: async (path, bytes) =>
      call(path, async (done) => (await session()).writeFile(path, bytes, { flag: 'wx', mode: 0o644 }, done)),
    chmod: async (path, mode) => call(path, async (done) => (await session()).chmod(path, mode, done)),
    async link(from, to) {
      const sftp = await session()
      try {
        await call(to, (done) => sftp.ext_openssh_hardlink(from, to, done))
      } catch (error) {
        // SFTP reports "exists" as a plain failure.
        if (await io.lstat(to).catch(() => undefined))
          throw Object.assign(new Error(`${to} exists`), { code: 'EEXIST' })
        throw error
      }
    },
    rename: async (from, to) => call(to, async (done) => (await session()).ext_openssh_rename(from, to, done)),
    unlink: async (path) => call(path, async (done) => (await session()).unlink(path, done)),
  }
  return io
}

/** The remote path with the symlinks of its deepest existing ancestor resolved. */
export async function remoteCanonical(sftp: SFTPWrapper, path: string): Promise<string> {
  let head = posix.resolve(path)
  const rest: string[] = []
  for (;;) {
    const real = await new Promise<string | undefined>((resolve) =>
      sftp.realpath(head, (error, resolved) => resolve(error ? undefined : resolved)),
    )
    // OpenSSH's realpath accepts a missing last component on some versions: confirm it exists.
    const exists = real ? await new Promise<boolean>((resolve) => sftp.stat(real, (error) => resolve(!error))) : false
    if (real && exists) return posix.resolve(real, ...rest.reverse())
    const parent = posix.dirname(head)
    if (parent === head) return posix.resolve(path)
    rest.push(posix.basename(head))
    head = parent
  }
}

export class RemoteFs extends SandboxFs {
  static override readonly inject = ['ssh', 'sandboxPolicy']
  private readonly ssh: SshConnection

  constructor(ctx: Context, config: LocalFsConfig = {}) {
    const ssh = ctx.ssh
    super(
      ctx,
      { cwd: ssh.info.root, ...(config ?? {}) },
      sftpIo(() => ssh.sftp()),
    )
    this.ssh = ssh
  }

  override resolvePath(path: string, options: { cwd?: string } = {}): string {
    const home = this.ssh.info.home
    const expanded = path === '~' || path.startsWith('~/') ? posix.join(home, path.slice(1)) : path
    return super.resolvePath(expanded, options)
  }

  protected override async canonical(path: string): Promise<string> {
    return remoteCanonical(await this.ssh.sftp(), path)
  }
}

export default RemoteFs
