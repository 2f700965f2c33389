import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
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
