// Per-line checksums of JSONL session files. A line is the JSON of a header or envelope with one
// more member last, `"crc":"<8 hex>"`: the CRC-32 of the same JSON without that member. A reader
// strips and checks it, so a flipped byte that keeps the line valid JSON is still caught, and the
// upper layers never see the member. Lines without it (files written before checksums) load unchecked.
import { crc32 } from 'node:zlib'

const SEAL = /,"crc":"([0-9a-f]{8})"\}$/

function hex(text: string): string {
  return crc32(text).toString(16).padStart(8, '0')
}

/** The sealed line (no newline) for `value`, which must serialize to a non-empty JSON object. */
export function sealLine(value: unknown): string {
  const body = JSON.stringify(value)
  return `${body.slice(0, -1)},"crc":"${hex(body)}"}`
}

/**
 * The JSON text of a line with its seal removed and checked. Returns `{ body }`, or `{ mismatch }`
 * when the seal does not match the text (the line changed after it was written).
 */
export function openLine(line: string): { body: string; sealed: boolean } | { mismatch: string } {
  const match = SEAL.exec(line)
  if (!match) return { body: line, sealed: false }
  const body = `${line.slice(0, match.index)}}`
  const expected = match[1] as string
  const actual = hex(body)
  return actual === expected ? { body, sealed: true } : { mismatch: `checksum ${actual}, recorded ${expected}` }
}
