// Per-line checksums of JSONL session files. A line is the JSON of a header or envelope with one
// more member last, `"crc":"<8 hex>"`: the CRC-32 of the same JSON without that member. A reader
// strips and checks it, so a flipped byte that keeps the line valid JSON is still caught, and the
// upper layers never see the member. Lines without it (files written before checksums) load unchecked.
import { createHash } from 'node:crypto'
import { crc32 } from 'node:zlib'

function hex(text: string): string {
  return crc32(text).toString(16).padStart(8, '0')
}

/** The sealed line (no newline) for `value`, which must serialize to a non-empty JSON object. */
export function sealLine(value: unknown): string {
  const body = JSON.stringify(value)
  return `${body.slice(0, -1)},"crc":"${hex(body)}"}`
}

/**
 * A sealed line that also carries the session's hash chain: `"hash":"<sha256 hex>"` before the seal,
 * the SHA-256 of the previous line's hash (none for the header) followed by the line's JSON without
 * the hash. The chain names a line that was changed, removed or moved even when its checksum was
 * redone, and its last hash stands for the whole session (what a signature signs).
 */
export function chainLine(value: unknown, previous: string | undefined): { line: string; hash: string } {
  const body = JSON.stringify(value)
  const hash = chainHash(previous, body)
  const chained = `${body.slice(0, -1)},"hash":"${hash}"}`
  return { line: `${chained.slice(0, -1)},"crc":"${hex(chained)}"}`, hash }
}

/** The chain's hash of a line whose JSON (without its hash) is `body`, after `previous`. */
export function chainHash(previous: string | undefined, body: string): string {
  const digest = createHash('sha256')
  if (previous) digest.update(previous)
  return digest.update(body).digest('hex')
}

/** `,"crc":"` then 8 hex digits then `"}`: the seal's bytes at the end of a sealed line. */
const SEAL_BYTES = 18
const SEAL_HEAD = Buffer.from(',"crc":"')
const CLOSE = Buffer.from('}')
const QUOTE = 0x22
const BRACE = 0x7d

/** The 8 lower-case hex digits at `at` as a number, or -1 when they are not that. */
function hexAt(buffer: Buffer, at: number): number {
  let value = 0
  for (let index = at; index < at + 8; index++) {
    const byte = buffer[index] as number
    const digit = byte >= 0x30 && byte <= 0x39 ? byte - 0x30 : byte >= 0x61 && byte <= 0x66 ? byte - 0x57 : -1
    if (digit < 0) return -1
    value = value * 16 + digit
  }
  return value
}

/**
 * The JSON text of the line `buffer[start, end)` (no newline) with its seal removed and checked.
 * Returns `{ body }`, or `{ mismatch }` when the seal does not match the text (the line changed after
 * it was written). The checksum is taken over the bytes as they are on disk, so a long session is
 * decoded once, for JSON.parse, and never re-encoded.
 */
export function openLine(
  buffer: Buffer,
  start: number,
  end: number,
): { body: string; sealed: boolean; hash?: string } | { mismatch: string } {
  const seal = end - SEAL_BYTES
  const sealed =
    seal > start &&
    buffer[end - 1] === BRACE &&
    buffer[end - 2] === QUOTE &&
    buffer.compare(SEAL_HEAD, 0, SEAL_HEAD.length, seal, seal + SEAL_HEAD.length) === 0
  const expected = sealed ? hexAt(buffer, seal + SEAL_HEAD.length) : -1
  if (expected < 0) return { body: buffer.toString('utf8', start, end), sealed: false }
  const actual = crc32(CLOSE, crc32(buffer.subarray(start, seal)))
  if (actual !== expected) {
    const recorded = buffer.toString('latin1', seal + SEAL_HEAD.length, seal + SEAL_HEAD.length + 8)
    return { mismatch: `checksum ${actual.toString(16).padStart(8, '0')}, recorded ${recorded}` }
  }
  // The chain member, when the line has one, is cut off here too: the body is the JSON it hashes.
  const member = seal - HASH_MEMBER_BYTES
  if (
    member > start &&
    buffer[seal - 1] === QUOTE &&
    buffer.compare(HASH_HEAD_BYTES, 0, HASH_HEAD_BYTES.length, member, member + HASH_HEAD_BYTES.length) === 0
  ) {
    const hash = buffer.toString('latin1', member + HASH_HEAD_BYTES.length, seal - 1)
    return { body: `${buffer.toString('utf8', start, member)}}`, sealed: true, hash }
  }
  return { body: `${buffer.toString('utf8', start, seal)}}`, sealed: true }
}

/** `,"hash":"` then 64 hex digits then `"`: the chain member just before a chained line's seal. */
const HASH_HEAD_BYTES = Buffer.from(',"hash":"')
const HASH_MEMBER_BYTES = HASH_HEAD_BYTES.length + 64 + 1
