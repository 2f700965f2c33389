// A throwaway OpenSSH server for tests: a fresh host key, a client key authorized for the current
// user, a known_hosts naming the host key, and `sshd -D` on a free loopback port. Nothing of the
// user's own ~/.ssh is read or written.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'

export interface TestSshd {
  port: number
  user: string
  dir: string
  /** The client's private key (unencrypted). */
  identity: string
  /** A known_hosts file holding the server's host key for `[127.0.0.1]:port`. */
  knownHosts: string
  /** Stops sshd and removes the keys. */
  stop(): Promise<void>
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
}

function keygen(path: string): string {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'dsh-test', '-f', path])
  return readFileSync(`${path}.pub`, 'utf8').trim()
}

async function listening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const until = Date.now() + 10_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sshd exited ${child.exitCode}: ${log()}`)
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > until) throw new Error(`sshd did not listen on ${port}: ${log()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Starts sshd; `stop()` kills it and removes the keys. */
export async function startSshd(): Promise<TestSshd> {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-sshd-'))
  const user = userInfo().username
  const hostPub = keygen(join(dir, 'host_ed25519'))
  const clientPub = keygen(join(dir, 'client_ed25519'))
  writeFileSync(join(dir, 'authorized_keys'), `${clientPub}\n`, { mode: 0o600 })
  const port = await freePort()
  const [type, key] = hostPub.split(' ')
  writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${port} ${type} ${key}\n`)
  // Running as root, sshd wants its privilege separation directory.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
  const config = join(dir, 'sshd_config')
  writeFileSync(
    config,
    [
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_ed25519')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `AllowUsers ${user}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'StrictModes no',
      'UsePAM no',
      `PidFile ${join(dir, 'sshd.pid')}`,
      'Subsystem sftp internal-sftp',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  )
  const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config, '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let log = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    log += chunk
  })
  await listening(port, child, () => log)
  return {
    port,
    user,
    dir,
    identity: join(dir, 'client_ed25519'),
    knownHosts: join(dir, 'known_hosts'),
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
