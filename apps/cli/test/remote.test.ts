// `dsh run --remote`: the built CLI against a real OpenSSH server on a free loopback port serving a
// directory (throwaway host and client keys, its own known_hosts). Every tool runs there: the files
// change in the served directory, the tests run there (over SSH, as the command's SSH_CONNECTION
// shows), cancel kills the remote process tree, and an unknown host key stops the run before any tool.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type AnySessionEvent, eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer, startSshd, type TestSshd } from '@dsh/test-support'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh, startDsh } from './dsh-child.js'

let sshd: TestSshd
let home: string
let project: string
let server: MockLlmServer

beforeAll(async () => {
  sshd = await startSshd()
})
afterAll(async () => {
  await sshd?.stop()
})
beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-remote-home-'))
  project = mkdtempSync(join(tmpdir(), 'dsh-remote-project-'))
  cpSync(fileURLToPath(new URL('../demo/sample-project', import.meta.url)), project, { recursive: true })
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(project, { recursive: true, force: true })
})

/** `dsh ...args` with the SSH world's key and known_hosts settings from the environment. */
function dsh(args: string[], knownHosts = sshd.knownHosts) {
  const sshEnv = { DSH_SSH_KNOWN_HOSTS: knownHosts, DSH_SSH_IDENTITY: sshd.identity }
  return runDsh(args, { home, modelUrl: server.url, env: sshEnv })
}

const remote = () => `ssh://${sshd.user}@127.0.0.1:${sshd.port}${project}`

function toolResults(events: AnySessionEvent[]): string[] {
  return eventData(events, 'tool/result').map(({ message }) => {
    const first = message.content[0]
    return first?.type === 'text' ? first.text : ''
  })
}

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

describe('dsh run --remote (the SSH execution world)', () => {
  it('fixes the failing test in a directory served over SSH: files change there, tests run there', async () => {
    server.enqueue(
      call('c1', 'bash', { command: 'echo "$SSH_CONNECTION" > ran-over-ssh; node test.js' }),
      call('c2', 'read', { path: 'cart.js' }),
      call('c3', 'edit', {
        path: 'cart.js',
        old_string: 'item.price + item.quantity',
        new_string: 'item.price * item.quantity',
      }),
      call('c4', 'bash', { command: 'node test.js' }),
      completionResponse({ text: 'Fixed on the remote machine.' }),
    )
    const result = await dsh(['run', '--remote', remote(), 'fix the failing tests'])
    expect(result.stderr).not.toMatch(/did not activate/)
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Fixed on the remote machine.\n')
    // The served directory changed, and its tests pass now.
    expect(readFileSync(join(project, 'cart.js'), 'utf8')).toContain('sum += item.price * item.quantity')
    expect(spawnSync(process.execPath, ['test.js'], { cwd: project }).status).toBe(0)
    // The commands ran in an SSH session of that server, in the served directory.
    expect(readFileSync(join(project, 'ran-over-ssh'), 'utf8').trim()).toMatch(
      new RegExp(` 127\\.0\\.0\\.1 ${sshd.port}$`),
    )
    const [file] = readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
    expect(JSON.parse(readFileSync(join(home, 'sessions', file as string), 'utf8').split('\n')[0] as string).cwd).toBe(
      project,
    )
    const results = toolResults(durableEvents(home))
    expect(results[0]).toContain('2 of 3 tests failed')
    expect(results[3]).toContain('all 3 tests passed')
    // The model was told where it works.
    const first = server.requests[0]?.body.messages as Array<{ content: string }>
    expect(JSON.stringify(first)).toContain(
      `runs on the remote machine ${sshd.user}@127.0.0.1:${sshd.port}:${project} over SSH`,
    )
  })

  /**
   * `dsh run --remote ... <extra args>` whose one bash call sleeps in the background and foreground (`sleep
   * <n>7` and `<n>8`), returned once the command runs on the remote machine.
   */
  async function runLongCommand(n: number, extra: string[] = []) {
    const marker = join(project, 'sleep-started')
    server.enqueue(call('c1', 'bash', { command: `sleep ${n}7 & touch ${marker}; sleep ${n}8; echo never` }))
    const { proc, exited } = startDsh(['run', ...extra, '--remote', remote(), 'run the long command'], {
      home,
      modelUrl: server.url,
      env: { DSH_SSH_KNOWN_HOSTS: sshd.knownHosts, DSH_SSH_IDENTITY: sshd.identity },
    })
    const started = Date.now()
    while (!existsSync(marker)) {
      if (Date.now() - started > 30_000) throw new Error(`the tool never started:\n${(await exited).stderr}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    const sleeps = `sleep ${n}[78]`
    expect(spawnSync('pgrep', ['-f', sleeps]).status).toBe(0)
    return { proc, exited, sleeps }
  }

  it('cancel kills the remote process tree', async () => {
    const { proc, exited, sleeps } = await runLongCommand(34)
    proc.kill('SIGINT')
    expect((await exited).code).toBe(130)
    const events = durableEvents(home)
    expect(toolResults(events)[0]).toMatch(/\[aborted: the command was cancelled and its process tree was killed\]/)
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } })
    // Neither sleep survives on the remote machine.
    expect(spawnSync('pgrep', ['-f', sleeps]).status).toBe(1)
  })

  it('a SIGKILLed dsh leaves no remote process behind: the remote watcher kills the tree when the connection drops', async () => {
    // Unsandboxed: bubblewrap there (--die-with-parent) would end the tree with the SSH session by itself.
    const { proc, exited, sleeps } = await runLongCommand(35, ['--permission-mode', 'danger-full-access'])
    proc.kill('SIGKILL')
    await exited
    // No terminate() ran: only the remote side can end them. TERM, then KILL after the grace.
    const deadline = Date.now() + 20_000
    while (spawnSync('pgrep', ['-f', sleeps]).status === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(spawnSync('pgrep', ['-f', sleeps]).status).toBe(1)
  })

  it('reads a Host alias from the SSH client config: dsh run --remote alias:/path', async () => {
    const config = join(home, 'ssh_config')
    writeFileSync(
      config,
      `Host dsh-test-box\n  HostName 127.0.0.1\n  Port ${sshd.port}\n  User ${sshd.user}\n  IdentityFile ${sshd.identity}\n`,
    )
    server.enqueue(
      call('c1', 'bash', { command: 'echo "$SSH_CONNECTION" > via-alias' }),
      completionResponse({ text: 'Done through the alias.' }),
    )
    // No DSH_SSH_IDENTITY: the key comes from the config's IdentityFile.
    const result = await runDsh(['run', '--remote', `dsh-test-box:${project}`, 'note the connection'], {
      home,
      modelUrl: server.url,
      env: { DSH_SSH_KNOWN_HOSTS: sshd.knownHosts, DSH_SSH_CONFIG: config },
    })
    expect(result.stderr).not.toMatch(/did not activate/)
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Done through the alias.\n')
    expect(readFileSync(join(project, 'via-alias'), 'utf8').trim()).toMatch(
      new RegExp(` 127\\.0\\.0\\.1 ${sshd.port}$`),
    )
    // The model is told the machine it works on, by its real name.
    expect(JSON.stringify(server.requests[0]?.body.messages)).toContain(
      `runs on the remote machine ${sshd.user}@127.0.0.1:${sshd.port}:${project} over SSH`,
    )
  })

  it('refuses an unknown host key with the way to trust it, before any model request', async () => {
    const empty = join(home, 'known_hosts')
    writeFileSync(empty, '')
    const result = await dsh(['run', '--remote', remote(), 'anything'], empty)
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(/host key of \[127\.0\.0\.1\]:\d+ \(ssh-ed25519 SHA256:[^)]+\) is not in /)
    expect(result.stderr).toContain(`ssh-keyscan -p ${sshd.port} 127.0.0.1 >> ~/.ssh/known_hosts`)
    expect(server.requests).toHaveLength(0)
    expect(readFileSync(join(project, 'cart.js'), 'utf8')).toContain('item.price + item.quantity')
  })
})
