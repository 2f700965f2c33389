// The SSH world against a real OpenSSH server on a free loopback port (throwaway host and client keys,
// its own known_hosts): the connection refuses unknown keys, processes run there and their trees die
// on terminate, files are read and written over SFTP with versions and the sandbox fence.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import SettingsService from '@dsh/settings'
import { startSshd, type TestSshd } from '@dsh/test-support'
import type { SpawnSpec } from '@dsh/world/subprocess'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import SshConnectionService from '../src/connection.js'
import RemoteFs from '../src/fs.js'
import RemoteSandboxPolicy from '../src/policy.js'
import SshSettings from '../src/settings.js'
import RemoteSubprocess from '../src/subprocess.js'

let sshd: TestSshd
let work: string

beforeAll(async () => {
  sshd = await startSshd()
  work = mkdtempSync(join(tmpdir(), 'dsh-remote-'))
})
afterAll(async () => {
  await sshd?.stop()
  rmSync(work, { recursive: true, force: true })
})

/** True while a process whose command line matches `pattern` runs. */
function running(pattern: string): boolean {
  return spawnSync('pgrep', ['-f', pattern]).status === 0
}

/** The pids of remote watchers of the command whose group is `pgid` (the sshd runs on this machine). */
function watchers(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
        return argv[0] === '/bin/sh' && argv[2]?.startsWith('p=$1') && argv[4] === String(pgid)
      } catch {
        return false
      }
    })
    .map(Number)
}

const target = () => `ssh://${sshd.user}@127.0.0.1:${sshd.port}${work}`

/**
 * Settings (no files, no variables), the SSH world's settings row, the connection, and the remote
 * subprocess, policy and fs providers; `close()` disposes them, the connection last.
 */
async function world() {
  const root = new Context()
  const fibers = [
    root.plugin(SettingsService, { home: work, cwd: work, env: {} }),
    root.plugin(SshSettings),
    root.plugin(SshConnectionService, { target: target(), knownHosts: [sshd.knownHosts], identity: sshd.identity }),
    root.plugin(RemoteSubprocess, {}),
    root.plugin(RemoteSandboxPolicy, { mode: 'workspace-write' }),
    root.plugin(RemoteFs, {}),
  ]
  for (let i = 0; i < 500 && !root.get('fs'); i++) await new Promise((resolve) => setTimeout(resolve, 20))
  const close = async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose()
  }
  return Object.assign(root, { close })
}

function spec(script: string): SpawnSpec {
  return {
    argv: ['bash', '-c', script],
    cwd: work,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin' },
    stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' },
    graceMs: 200,
    output: { headBytes: 4096, tailBytes: 4096 },
  }
}

describe('the SSH execution world', () => {
  it('runs a command on the remote machine, in the spec env only, with exit code and combined output', async () => {
    const root = await world()
    const handle = await root.subprocess.spawn({
      ...spec('echo "out $FOO $HOME"; echo err >&2; pwd; test -n "$SSH_CONNECTION" || echo local; exit 3'),
      env: { PATH: '/usr/bin:/bin', FOO: 'bar' },
    })
    const exit = await handle.done
    expect(exit).toMatchObject({ exitCode: 3, signal: null, terminated: false, survivors: 0 })
    // stdout and stderr are separate SSH streams: each keeps its order, their interleaving is not exact.
    expect(exit.output.text.split('\n').sort()).toEqual(['', 'err', 'local', 'out bar ', work].sort())
    await root.close()
  })

  it('terminate() kills the whole remote process tree, a TERM-ignoring child included', async () => {
    const root = await world()
    const marker = join(work, 'started')
    const handle = await root.subprocess.spawn(spec(`(trap '' TERM; sleep 311) & sleep 312 & touch ${marker}; wait`))
    for (let i = 0; i < 200; i++) {
      try {
        readFileSync(marker)
        break
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
    }
    expect(running('sleep 31[12]')).toBe(true)
    // One watcher, in a session of its own, waits for the channel to drop (see the SIGKILL test of the CLI).
    expect(watchers(handle.pid)).toHaveLength(1)
    const exit = await handle.terminate()
    expect(exit).toMatchObject({ terminated: true, survivors: 0 })
    expect(running('sleep 31[12]')).toBe(false)
    await root.close()
  })

  it('gives a command its stdin text, and leaves no watcher behind after a normal exit', async () => {
    const root = await world()
    const handle = await root.subprocess.spawn({
      ...spec('tr a-z A-Z; echo " pgid=$(ps -o pgid= -p $$ | tr -d \\ )"'),
      stdio: { stdin: { text: 'from stdin' }, stdout: 'pipe', stderr: 'pipe' },
    })
    const exit = await handle.done
    expect(exit).toMatchObject({ exitCode: 0, survivors: 0 })
    expect(exit.output.text).toBe(`FROM STDIN pgid=${handle.pid}\n`)
    // The watcher of that command (its own session, `sh <pgid>`) leaves once the leader exited.
    const deadline = Date.now() + 5000
    while (watchers(handle.pid).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(watchers(handle.pid)).toEqual([])
    await root.close()
  })

  it('a missing executable or directory rejects the spawn like the local provider', async () => {
    const root = await world()
    await expect(root.subprocess.spawn({ ...spec(''), argv: ['no-such-tool-xyz'] })).rejects.toMatchObject({
      code: 'SUBPROCESS_SPAWN_FAILED',
    })
    await expect(root.subprocess.spawn({ ...spec('true'), cwd: '/no/such/dir' })).rejects.toMatchObject({
      code: 'SUBPROCESS_SPAWN_FAILED',
    })
    await root.close()
  })

  it('reads, writes and edits remote files over SFTP with versions, and fences writes to the workspace', async () => {
    const root = await world()
    const fs = root.fs
    const created = await fs.writeText('notes/a.txt', 'one\ntwo\n', { kind: 'createIfAbsent' })
    expect(created.created).toBe(true)
    expect(readFileSync(join(work, 'notes/a.txt'), 'utf8')).toBe('one\ntwo\n')
    await expect(fs.writeText('notes/a.txt', 'x', { kind: 'createIfAbsent' })).rejects.toMatchObject({
      code: 'FS_EXISTS',
    })
    const read = await fs.readText('notes/a.txt')
    expect(read.version).toBe(created.version)
    writeFileSync(join(work, 'notes/a.txt'), 'one\nTWO\n')
    await expect(
      fs.editText('notes/a.txt', [{ oldText: 'one', newText: '1' }], { expectedVersion: read.version }),
    ).rejects.toMatchObject({ code: 'FS_VERSION_CONFLICT' })
    const edited = await fs.editText('notes/a.txt', [{ oldText: 'TWO', newText: 'two' }])
    expect(edited.after).toBe('one\ntwo\n')
    expect(readFileSync(join(work, 'notes/a.txt'), 'utf8')).toBe('one\ntwo\n')
    expect((await fs.list('notes')).map((e) => e.name)).toEqual(['a.txt'])
    expect((await fs.grep('two', '.')).matches).toEqual([{ path: 'notes/a.txt', line: 2, text: 'two' }])
    expect((await fs.glob('*.txt')).paths).toEqual(['notes/a.txt'])
    mkdirSync(join(work, '..', 'outside-dsh'), { recursive: true })
    await expect(fs.writeText('/etc/dsh-should-not-exist', 'x', { kind: 'overwrite' })).rejects.toMatchObject({
      code: 'FS_SANDBOX_DENIED',
    })
    await root.close()
  })
})
