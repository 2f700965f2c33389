import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import CredentialsService from '@dsh/settings/credentials'
import { describe, expect, it } from 'vitest'
import { createWorld, hasBwrap, textOf } from './harness.js'

const skip = !hasBwrap() && !process.env.CI
if (skip) console.warn('\n!!! bubblewrap is NOT usable on this machine: the secret-masking tests are SKIPPED !!!\n')

const KEY_TEXT = 'sk-secret-value-do-not-leak'

/** A fake HOME with the usual stores and a DSH_HOME with a credentials file, both under /tmp. */
function fakeHome() {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-home-')))
  mkdirSync(join(home, '.ssh'))
  writeFileSync(join(home, '.ssh', 'id_rsa'), `${KEY_TEXT}-ssh\n`)
  writeFileSync(join(home, '.netrc'), `machine example.com password ${KEY_TEXT}-netrc\n`)
  const dshHome = join(home, '.dsh')
  mkdirSync(dshHome)
  writeFileSync(join(dshHome, '.credentials.yaml'), `DEEPSEEK_API_KEY: ${KEY_TEXT}-dsh\n`)
  return { home, dshHome, [Symbol.dispose]: () => rmSync(home, { recursive: true, force: true }) }
}

describe.skipIf(skip)('secrets are out of the model reach (real bubblewrap)', () => {
  it('bash cannot read DSH_HOME credentials, ~/.ssh or ~/.netrc; the read tool refuses them, even through a link', async () => {
    using fake = fakeHome()
    await using world = await createWorld({ policy: { home: fake.home } })
    await world.root.plugin(CredentialsService, { home: fake.dshHome, env: {} })
    const bash = await world.call('bash', {
      command: `cat ${fake.dshHome}/.credentials.yaml ${fake.home}/.ssh/id_rsa ${fake.home}/.netrc; ls -A ${fake.home}/.ssh; echo end`,
    })
    expect(textOf(bash)).not.toContain(KEY_TEXT)
    expect(textOf(bash)).toContain('end')
    for (const path of [join(fake.dshHome, '.credentials.yaml'), join(fake.home, '.ssh', 'id_rsa')]) {
      const read = await world.call('read', { path })
      expect(read.isError).toBe(true)
      expect(textOf(read)).toContain('[secret: refused]')
      expect(textOf(read)).not.toContain(KEY_TEXT)
    }
    symlinkSync(join(fake.home, '.ssh', 'id_rsa'), join(world.ws, 'innocent.txt'))
    const linked = await world.call('read', { path: 'innocent.txt' })
    expect(textOf(linked)).toContain('[secret: refused]')
    const grep = await world.call('grep', { pattern: 'sk-secret', path: fake.home })
    expect(textOf(grep)).not.toContain(KEY_TEXT)
  })

  it('browser profiles are hidden from bash and refused by the read tool', async () => {
    using fake = fakeHome()
    const firefox = join(fake.home, '.mozilla', 'firefox', 'abc.default')
    const chrome = join(fake.home, '.config', 'google-chrome', 'Default')
    mkdirSync(firefox, { recursive: true })
    mkdirSync(chrome, { recursive: true })
    writeFileSync(join(firefox, 'logins.json'), `{"password":"${KEY_TEXT}-firefox"}\n`)
    writeFileSync(join(chrome, 'Cookies'), `${KEY_TEXT}-chrome\n`)
    await using world = await createWorld({ policy: { home: fake.home } })
    const bash = textOf(
      await world.call('bash', {
        command: `cat ${firefox}/logins.json ${chrome}/Cookies 2>/dev/null; ls -AR ${fake.home}/.mozilla ${fake.home}/.config; echo end`,
      }),
    )
    expect(bash).toContain('end')
    expect(bash).not.toContain(KEY_TEXT)
    expect(bash).not.toMatch(/abc\.default|logins\.json|Default|Cookies/)
    const read = await world.call('read', { path: join(chrome, 'Cookies') })
    expect(textOf(read)).toContain('[secret: refused]')
    // The files are still there: only the sandbox's view of them is empty.
    expect(readFileSync(join(chrome, 'Cookies'), 'utf8')).toContain(KEY_TEXT)
  })

  it("the user's runtime directory and agent sockets are out of reach, and their variables are not passed", async () => {
    const runtime = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-run-user-')))
    const agentDir = realpathSync(mkdtempSync(join(tmpdir(), 'ssh-agent-')))
    const bus = join(runtime, 'bus')
    const agent = join(agentDir, 'agent.1')
    writeFileSync(join(runtime, 'keyring-token'), `${KEY_TEXT}-runtime\n`)
    const servers = [bus, agent].map((path) => createServer((_req, res) => res.end(`reached ${path}`)).listen(path))
    await Promise.all(servers.map((server) => new Promise((done) => server.once('listening', done))))
    const planted = {
      SSH_AUTH_SOCK: agent,
      DBUS_SESSION_BUS_ADDRESS: `unix:path=${bus}`,
      GPG_AGENT_INFO: `${runtime}/gnupg/S.gpg-agent:0:1`,
      XDG_RUNTIME_DIR: runtime,
    }
    const saved = Object.fromEntries(Object.keys(planted).map((name) => [name, process.env[name]]))
    Object.assign(process.env, planted)
    try {
      const probe = `ls -A ${runtime}; cat ${runtime}/keyring-token 2>/dev/null; curl -s --max-time 3 --unix-socket ${bus} http://x/; curl -s --max-time 3 --unix-socket ${agent} http://x/; env; echo end`
      // Unconfined the sockets answer: the test would see a leak if the sandbox did not hide them.
      await using open = await createWorld({ mode: 'danger-full-access', policy: { runtime: [runtime] } })
      expect(textOf(await open.call('bash', { command: probe }))).toContain(`reached ${agent}`)
      // Confined: the runtime directory (given) and the SSH_AUTH_SOCK socket (from the environment).
      await using world = await createWorld({ policy: { runtime: [runtime, agent] } })
      const out = textOf(await world.call('bash', { command: probe }))
      expect(out).toContain('end')
      expect(out).not.toContain(KEY_TEXT)
      expect(out).not.toContain('keyring-token')
      expect(out).not.toContain('reached')
      for (const name of ['SSH_AUTH_SOCK', 'DBUS_SESSION_BUS_ADDRESS', 'GPG_AGENT_INFO', 'XDG_RUNTIME_DIR']) {
        expect(out).not.toContain(`${name}=`)
      }
      // The default list takes the sockets the environment names.
      await using defaults = await createWorld()
      const socket = textOf(
        await defaults.call('bash', { command: `curl -s --max-time 3 --unix-socket ${agent} http://x/; echo end` }),
      )
      expect(socket).toContain('end')
      expect(socket).not.toContain('reached')
      expect(defaults.root.sandboxPolicy.resolve('s1').secretPaths).toEqual(expect.arrayContaining([agent, bus]))
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
      for (const server of servers) server.close()
      rmSync(runtime, { recursive: true, force: true })
      rmSync(agentDir, { recursive: true, force: true })
    }
  })

  it('the tool environment never carries provider keys', async () => {
    process.env.DEEPSEEK_API_KEY = `${KEY_TEXT}-env`
    try {
      await using world = await createWorld()
      expect(textOf(await world.call('bash', { command: 'env' }))).not.toContain(KEY_TEXT)
    } finally {
      delete process.env.DEEPSEEK_API_KEY
    }
  })

  it('.env files above the workspace are hidden; the workspace .env stays readable', async () => {
    using fake = fakeHome()
    await using world = await createWorld({ policy: { home: fake.home, secretPaths: ['~/custom-secret'] } })
    writeFileSync(join(world.ws, '.env'), 'PROJECT=visible\n')
    writeFileSync(join(fake.home, '.env.local'), `TOKEN=${KEY_TEXT}-dotenv\n`)
    writeFileSync(join(fake.home, 'custom-secret'), `${KEY_TEXT}-custom\n`)
    const out = textOf(
      await world.call('bash', { command: `cat .env ${fake.home}/.env.local ${fake.home}/custom-secret; true` }),
    )
    expect(out).toContain('PROJECT=visible')
    expect(out).not.toContain(KEY_TEXT)
  })

  it('network off: curl to a local HTTP server fails; on: it succeeds; the sandbox note says which', async () => {
    const server = createServer((_req, res) => res.end('reached'))
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    try {
      await using on = await createWorld()
      expect(textOf(await on.call('bash', { command: `curl -s --max-time 5 ${url}` }))).toBe('reached')
      await using off = await createWorld({ policy: { network: 'off' } })
      const refused = textOf(await off.call('bash', { command: `curl -s --max-time 5 ${url}; echo "exit $?"` }))
      expect(refused).not.toContain('reached')
      expect(refused).toMatch(/exit [1-9]/)
      const note = async () => (await off.root.systemPrompt.render({ sessionId: 's1', cwd: off.ws })).dynamic
      expect(await note()).toContain('Network: off')
      off.root.sandboxPolicy.setMode('s1', 'workspace-write', { network: 'on' })
      expect(off.session.events.at(-1)).toMatchObject({ type: 'sandbox/mode', data: { network: 'on' } })
      expect(await note()).toContain('Network: on')
      expect(textOf(await off.call('bash', { command: `curl -s --max-time 5 ${url}` }))).toBe('reached')
    } finally {
      server.close()
    }
  })
})
