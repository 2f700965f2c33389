// Host key verification against OpenSSH `known_hosts` files: plain and hashed (`|1|salt|hash`) host
// patterns, `[host]:port` for non-default ports, `*`/`?` wildcards, `!` negation, `@revoked` lines.
// A key is accepted only when a line for this host carries exactly the presented key blob; an unknown
// host, a changed key and a revoked key are refused. `@cert-authority` lines are not supported
// (certificates are refused like unknown keys), which the refusal message says.
import { createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'

/** What the check found for a presented key. */
export type HostKeyVerdict =
  | { ok: true; file: string; line: number }
  | { ok: false; reason: 'unknown' | 'changed' | 'revoked'; files: readonly string[]; line?: number }

interface Entry {
  file: string
  line: number
  marker: '' | '@revoked' | '@cert-authority'
  patterns: string
  blob: Buffer
}

function parse(file: string, text: string): Entry[] {
  const entries: Entry[] = []
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const fields = line.split(/\s+/)
    let marker: Entry['marker'] = ''
    if (fields[0] === '@revoked' || fields[0] === '@cert-authority') marker = fields.shift() as Entry['marker']
    const [patterns, , key] = fields
    if (!patterns || !key) continue
    entries.push({ file, line: index + 1, marker, patterns, blob: Buffer.from(key, 'base64') })
  }
  return entries
}

/** The name a known_hosts line uses for `host` on `port`: `host`, or `[host]:port` off port 22. */
export function hostName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`
}

function wildcard(pattern: string, name: string): boolean {
  const regex = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.')
  return new RegExp(`^${regex}$`, 'i').test(name)
}

function hashedMatch(pattern: string, name: string): boolean {
  const [, magic, salt, hash] = pattern.split('|')
  if (magic !== '1' || !salt || !hash) return false
  return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash
}

/** True when the comma-separated pattern list names `name` (a negated match wins over any other). */
export function matchesHost(patterns: string, name: string): boolean {
  if (patterns.startsWith('|')) return hashedMatch(patterns, name)
  let matched = false
  for (const pattern of patterns.split(',')) {
    if (pattern.startsWith('!')) {
      if (wildcard(pattern.slice(1), name)) return false
    } else if (wildcard(pattern, name)) matched = true
  }
  return matched
}

/** Checks `key` (the raw public key blob the server presented) for `host`:`port` against `files`. */
export function verifyHostKey(files: readonly string[], host: string, port: number, key: Buffer): HostKeyVerdict {
  const name = hostName(host, port)
  const entries: Entry[] = []
  for (const file of files) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    entries.push(...parse(file, text))
  }
  const revoked = entries.find((entry) => entry.marker === '@revoked' && entry.blob.equals(key))
  if (revoked) return { ok: false, reason: 'revoked', files, line: revoked.line }
  const forHost = entries.filter((entry) => entry.marker === '' && matchesHost(entry.patterns, name))
  const same = forHost.find((entry) => entry.blob.equals(key))
  if (same) return { ok: true, file: same.file, line: same.line }
  const keyType = (blob: Buffer) => (blob.length > 4 ? blob.subarray(4, 4 + blob.readUInt32BE(0)).toString() : '')
  // A line for this host with a key of the same type but other bytes: the key changed.
  const changed = forHost.find((entry) => keyType(entry.blob) === keyType(key))
  if (changed) return { ok: false, reason: 'changed', files, line: changed.line }
  return { ok: false, reason: 'unknown', files }
}
