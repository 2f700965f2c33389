// A verifiable record (issue 37): every line of a JSONL session carries a hash chained to the one
// before it. `dsh sessions verify ID` checks it through the built CLI and names the first event that
// was changed (even with its checksum redone, as a tool would), removed, or cut off; `dsh sessions
// sign` signs the chain's head with an Ed25519 PEM key or an OpenSSH key, and verify --signature
// --key says whether the session is still what was signed.
import { execFileSync } from 'node:child_process'
import { generateKeyPairSync } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

let home: string
let project: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-verify-'))
  project = join(home, 'project')
  mkdirSync(project)
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

const dsh = (args: string[]) => runDsh(args, { home, cwd: project, modelUrl: server.url })

async function recorded(): Promise<{ id: string; file: string }> {
  server.enqueue(
    completionResponse({ toolCalls: [{ id: 'c1', name: 'ls', arguments: JSON.stringify({ path: '.' }) }] }),
    completionResponse({ text: 'Listed.' }),
  )
  const run = await dsh(['run', '--output', 'json', 'list the files'])
  expect(run.code, run.stderr).toBe(0)
  const id = JSON.parse(run.stdout).sessionId as string
  return { id, file: join(home, 'sessions', `${id}.jsonl`) }
}

const lines = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n')

/** Rewrites line `index` with `edit` applied to its JSON and its checksum redone (a tool's edit). */
function editResealed(file: string, index: number, edit: (text: string) => string) {
  const all = lines(file)
  const line = all[index] as string
  const body = edit(line.replace(/,"crc":"[0-9a-f]{8}"\}$/, '}'))
  const crc = crc32(body).toString(16).padStart(8, '0')
  all[index] = `${body.slice(0, -1)},"crc":"${crc}"}`
  writeFileSync(file, `${all.join('\n')}\n`)
}

it('verifies an untouched session and names the event a tool changed or a person removed', async () => {
  const { id, file } = await recorded()
  const good = await dsh(['sessions', 'verify', id.slice(0, 8)])
  expect(good.code, good.stderr).toBe(0)
  const events = lines(file).length - 1
  expect(good.stdout).toContain(`${id}: verified, ${events} events, chain intact`)
  const original = readFileSync(file)

  // Event 3's content changed, its checksum redone: the chain still names it.
  editResealed(file, 4, (text) => text.replace('"seq":3,', '"seq":3,"extra":1,'))
  const altered = await dsh(['sessions', 'verify', id])
  expect(altered.code).toBe(14)
  expect(altered.stdout).toContain('NOT verified: event 3 does not match its chain hash')

  // A line removed by hand: the first missing event is named.
  writeFileSync(file, original)
  const all = lines(file)
  all.splice(6, 1)
  writeFileSync(file, `${all.join('\n')}\n`)
  const removed = await dsh(['sessions', 'verify', id, '--json'])
  expect(removed.code).toBe(14)
  expect(JSON.parse(removed.stdout)).toMatchObject({ ok: false, seq: 5, kind: 'missing' })

  // The last two events cut off: the session list recorded more.
  writeFileSync(file, original)
  const kept = lines(file).slice(0, -2)
  writeFileSync(file, `${kept.join('\n')}\n`)
  const cut = await dsh(['sessions', 'verify', id, '--json'])
  expect(cut.code).toBe(14)
  expect(JSON.parse(cut.stdout)).toMatchObject({ ok: false, seq: events - 2, kind: 'truncated' })
})

it('signs the chain with an Ed25519 key and says when the session changed since', async () => {
  const { id } = await recorded()
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const other = generateKeyPairSync('ed25519').publicKey
  writeFileSync(join(home, 'key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }))
  writeFileSync(join(home, 'key.pub.pem'), publicKey.export({ type: 'spki', format: 'pem' }))
  writeFileSync(join(home, 'other.pub.pem'), other.export({ type: 'spki', format: 'pem' }))
  const sig = join(home, 'session.sig')
  const signed = await dsh(['sessions', 'sign', id, '--key', join(home, 'key.pem'), '--out', sig])
  expect(signed.code, signed.stderr).toBe(0)
  const verify = (key: string) => dsh(['sessions', 'verify', id, '--signature', sig, '--key', join(home, key)])
  const good = await verify('key.pub.pem')
  expect(good.code, good.stdout).toBe(0)
  expect(good.stdout).toContain('signature: good')
  // The export carries the chain: the copy verifies on its own, with the same signature; an altered
  // copy does not.
  const exported = await dsh(['sessions', 'export', id, '--format', 'jsonl'])
  const copy = join(home, 'carried.jsonl')
  writeFileSync(copy, exported.stdout)
  const carried = await dsh(['sessions', 'verify', copy, '--signature', sig, '--key', join(home, 'key.pub.pem')])
  expect(carried.code, carried.stdout + carried.stderr).toBe(0)
  expect(carried.stdout).toContain(`${id}: verified`)
  editResealed(copy, 3, (text) => text.replace('"seq":2,', '"seq":2,"x":0,'))
  const altered = await dsh(['sessions', 'verify', copy, '--signature', sig, '--key', join(home, 'key.pub.pem')])
  expect(altered.code).toBe(14)
  expect(altered.stdout).toContain('NOT verified: event 2')
  const wrong = await verify('other.pub.pem')
  expect(wrong.code).toBe(14)
  expect(wrong.stdout).toContain('signature: BAD: the signature was not made by this key')
  // One more turn: the chain is longer than what was signed.
  server.enqueue(completionResponse({ text: 'More.' }))
  expect((await dsh(['run', '--resume', id, 'more'])).code).toBe(0)
  const changed = await verify('key.pub.pem')
  expect(changed.code).toBe(14)
  expect(changed.stdout).toMatch(/signature: BAD: the session changed since it was signed: signed at \d+ events/)
})

it('signs and checks with an OpenSSH key through ssh-keygen', async () => {
  const { id } = await recorded()
  const key = join(home, 'id_ed25519')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'test', '-f', key])
  const sig = join(home, 'session.sig')
  const signed = await dsh(['sessions', 'sign', id, '--key', key, '--out', sig])
  expect(signed.code, signed.stderr).toBe(0)
  expect(JSON.parse(readFileSync(sig, 'utf8'))).toMatchObject({ algorithm: 'ssh', sessionId: id })
  const good = await dsh(['sessions', 'verify', id, '--signature', sig, '--key', `${key}.pub`])
  expect(good.code, good.stdout + good.stderr).toBe(0)
  expect(good.stdout).toContain('signature: good')
  const otherKey = join(home, 'other')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'other', '-f', otherKey])
  const bad = await dsh(['sessions', 'verify', id, '--signature', sig, '--key', `${otherKey}.pub`])
  expect(bad.code).toBe(14)
  expect(bad.stdout).toContain('signature: BAD: ssh-keygen')
})
