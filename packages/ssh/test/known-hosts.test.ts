// Host key checks against known_hosts lines as OpenSSH writes them (plain, [host]:port, hashed,
// wildcards, negation, @revoked), with real ed25519 keys from ssh-keygen.
import { execFileSync } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { matchesHost, verifyHostKey } from '../src/known-hosts.js'

const dir = mkdtempSync(join(tmpdir(), 'dsh-known-hosts-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function key(name: string): { line: string; blob: Buffer } {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, name)])
  const [type, base64] = readFileSync(join(dir, `${name}.pub`), 'utf8').split(' ')
  return { line: `${type} ${base64}`, blob: Buffer.from(base64 as string, 'base64') }
}

const server = key('server')
const other = key('other')

function file(name: string, text: string): string {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

describe('known_hosts', () => {
  it('accepts only the listed key for the host, with [host]:port off port 22', () => {
    const hosts = file('a', `# comment\nexample.org ${server.line}\n[127.0.0.1]:2222 ${server.line}\n`)
    expect(verifyHostKey([hosts], 'example.org', 22, server.blob)).toMatchObject({ ok: true, line: 2 })
    expect(verifyHostKey([hosts], '127.0.0.1', 2222, server.blob)).toMatchObject({ ok: true, line: 3 })
    expect(verifyHostKey([hosts], '127.0.0.1', 22, server.blob)).toMatchObject({ ok: false, reason: 'unknown' })
    expect(verifyHostKey([hosts], 'example.org', 22, other.blob)).toMatchObject({ ok: false, reason: 'changed' })
    expect(verifyHostKey([join(dir, 'missing')], 'example.org', 22, server.blob)).toMatchObject({
      ok: false,
      reason: 'unknown',
    })
  })

  it('matches hashed names, wildcards and negations', () => {
    const salt = randomBytes(20)
    const hash = createHmac('sha1', salt).update('[db.internal]:2200').digest('base64')
    expect(matchesHost(`|1|${salt.toString('base64')}|${hash}`, '[db.internal]:2200')).toBe(true)
    expect(matchesHost(`|1|${salt.toString('base64')}|${hash}`, 'db.internal')).toBe(false)
    expect(matchesHost('*.example.org,!bad.example.org', 'good.example.org')).toBe(true)
    expect(matchesHost('*.example.org,!bad.example.org', 'bad.example.org')).toBe(false)
    expect(matchesHost('web?.example.org', 'web1.example.org')).toBe(true)
  })

  it('refuses a key marked @revoked even when it is also listed', () => {
    const hosts = file('b', `example.org ${server.line}\n@revoked * ${server.line}\n`)
    expect(verifyHostKey([hosts], 'example.org', 22, server.blob)).toMatchObject({ ok: false, reason: 'revoked' })
  })
})
