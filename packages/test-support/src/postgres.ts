// A throwaway PostgreSQL cluster for tests: `initdb` into a temp directory and `postgres` listening only
// on a unix socket in that directory (no TCP port, no Docker), stopped and deleted by `stop()`.
// PostgreSQL refuses to run as root, so under root (CI) the server runs as `nobody`.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface Postgres {
  /** `postgres://dsh@localhost/<database>?host=<socket dir>` (the host parameter wins: a unix socket). */
  url(database?: string): string
  /** The directory holding the data and the socket. */
  dir: string
  stop(): Promise<void>
}

/** The directory of `initdb` and `postgres`: `$PG_BIN`, PATH, or Debian's /usr/lib/postgresql/<v>/bin. */
export function postgresBin(): string | undefined {
  const candidates = [process.env.PG_BIN]
  for (const dir of (process.env.PATH ?? '').split(':')) candidates.push(dir)
  const debian = '/usr/lib/postgresql'
  if (existsSync(debian)) {
    const versions = readdirSync(debian).sort((a, b) => Number(b) - Number(a))
    for (const version of versions) candidates.push(join(debian, version, 'bin'))
  }
  return candidates.find((dir) => dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres')))
}

const NOBODY = 65534

/** Starts a cluster; rejects when PostgreSQL is not installed (see `postgresBin`). */
export async function startPostgres(): Promise<Postgres> {
  const bin = postgresBin()
  if (!bin) throw new Error('PostgreSQL is not installed: apt-get install postgresql (or set PG_BIN)')
  const dir = mkdtempSync(join(tmpdir(), 'dsh-pg-'))
  const asRoot = process.getuid?.() === 0
  if (asRoot) chownSync(dir, NOBODY, NOBODY)
  const user = asRoot ? { uid: NOBODY, gid: NOBODY } : {}
  const data = join(dir, 'data')
  execFileSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', 'dsh', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
    { stdio: 'ignore', ...user },
  )
  const server: ChildProcess = spawn(
    join(bin, 'postgres'),
    ['-D', data, '-k', dir, '-c', 'listen_addresses=', '-c', 'fsync=off', '-c', 'full_page_writes=off'],
    { stdio: ['ignore', 'ignore', 'pipe'], ...user },
  )
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()))
  let log = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`postgres did not start within 30 s:\n${log}`)), 30_000)
    server.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString()
      if (log.includes('ready to accept connections')) {
        clearTimeout(timer)
        resolve()
      }
    })
    server.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`postgres exited with ${code}:\n${log}`))
    })
  })
  return {
    dir,
    url: (database = 'postgres') => `postgres://dsh@localhost/${database}?host=${encodeURIComponent(dir)}`,
    async stop() {
      // SIGINT is the fast shutdown: open sessions are ended, the cluster is left consistent.
      server.kill('SIGINT')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
