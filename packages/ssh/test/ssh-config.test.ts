// The OpenSSH client config as the SSH world reads it: Host aliases give HostName, User, Port and
// IdentityFile (tokens expanded); what the remote itself names wins; Match exec is never run.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { parseRemote } from '../src/index.js'
import { readHostConfig, resolveTarget } from '../src/ssh-config.js'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-ssh-config-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

function configFile(text: string): string {
  const file = join(dir, 'config')
  writeFileSync(file, text)
  return file
}

const CONFIG = `
Host build
  HostName build.example.net
  User alice
  Port 2222
  IdentityFile ~/.ssh/build_key
  IdentityFile %d/.ssh/%r@%h

Host *.internal
  HostName %h.corp.example
  User ops

Host *
  User fallback
  Port 2200
`

describe('the SSH client config', () => {
  it('resolves a Host alias to its HostName, User, Port and IdentityFiles (first match wins per key)', () => {
    const spec = parseRemote('build:/srv/app')
    expect(spec).toEqual({ host: 'build', path: '/srv/app' })
    const host = readHostConfig(configFile(CONFIG), spec)
    expect(host).toEqual({
      hostName: 'build.example.net',
      user: 'alice',
      port: 2222,
      identityFiles: [join(homedir(), '.ssh/build_key'), join(homedir(), '.ssh/alice@build.example.net')],
    })
    expect(resolveTarget(spec, host)).toEqual({
      user: 'alice',
      host: 'build.example.net',
      port: 2222,
      path: '/srv/app',
    })
  })

  it('lets the remote name its own user and port over the config, and expands %h in HostName', () => {
    const spec = parseRemote('ssh://bob@db.internal:2022/data')
    const host = readHostConfig(configFile(CONFIG), spec)
    expect(resolveTarget(spec, host)).toEqual({
      user: 'bob',
      host: 'db.internal.corp.example',
      port: 2022,
      path: '/data',
    })
  })

  it('takes the catch-all section for a host without one, and the local user when nothing names one', () => {
    const spec = parseRemote('elsewhere:/w')
    expect(resolveTarget(spec, readHostConfig(configFile(CONFIG), spec))).toEqual({
      user: 'fallback',
      host: 'elsewhere',
      port: 2200,
      path: '/w',
    })
    expect(resolveTarget(spec, readHostConfig(join(dir, 'missing'), spec))).toEqual({
      user: userInfo().username,
      host: 'elsewhere',
      port: 22,
      path: '/w',
    })
  })

  it('never runs a Match exec command while reading', () => {
    const marker = join(dir, 'ran')
    const spec = parseRemote('box:/w')
    const host = readHostConfig(configFile(`Match exec "touch ${marker}"\n  User matched\n`), spec)
    expect(existsSync(marker)).toBe(false)
    expect(host.user).toBeUndefined()
  })

  it('refuses a Port that is not a port, naming the file and the fix', () => {
    const spec = parseRemote('build:/w')
    const file = configFile('Host build\n  Port ssh\n')
    expect(() => readHostConfig(file, spec)).toThrow(expect.objectContaining({ code: 'SSH_CONFIG_INVALID' }))
    expect(() => readHostConfig(file, spec)).toThrow(`${file}: Port "ssh" for host build is not a port number`)
  })
})
