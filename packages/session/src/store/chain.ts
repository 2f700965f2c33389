// The hash chain of a session file as the JSONL store writes it (decision 480), checked line by line.
// Here rather than in the provider module so a consumer (`dsh sessions verify FILE`) can check a
// carried copy without the store.
import type { ChainVerdict } from './index.js'
import { chainHash, openLine } from './line-seal.js'

const NEWLINE = 0x0a

/**
 * Checks the hash chain of a session file: each line's checksum and chain hash against its content
 * and the line before it, dense seqs, and (when the session list recorded one) the event count.
 * The first line that breaks it is named by its event seq (-1: the header).
 */
export function verifyLines(buffer: Buffer, recordedEvents?: number): ChainVerdict {
  let position = 0
  let line = 0
  let previous: string | undefined
  let chained = false
  let unchained = 0
  const name = (seq: number) => (seq < 0 ? 'the header' : `event ${seq}`)
  const broken = (seq: number, kind: Extract<ChainVerdict, { ok: false }>['kind'], why: string): ChainVerdict => ({
    ok: false,
    seq,
    kind,
    message: `${name(seq)} ${why}`,
  })
  while (position < buffer.length) {
    const end = buffer.indexOf(NEWLINE, position)
    if (end < 0) {
      return broken(line - 1, 'unreadable', 'was cut off by an interrupted write (dsh sessions repair ID removes it)')
    }
    const expected = line - 1
    const opened = openLine(buffer, position, end)
    if ('mismatch' in opened)
      return broken(expected, 'altered', `was changed after it was written (${opened.mismatch})`)
    const split = opened
    let record: { seq?: unknown }
    try {
      record = JSON.parse(split.body)
    } catch {
      return broken(expected, 'altered', 'is not JSON')
    }
    if (line > 0 && record.seq !== expected) {
      const seq = typeof record.seq === 'number' ? record.seq : expected
      return seq > expected
        ? broken(expected, 'missing', `is missing (event ${seq} follows event ${expected - 1})`)
        : broken(seq, 'moved', `is out of place (found after event ${expected - 1})`)
    }
    if (!split.hash) {
      if (chained) return broken(expected, 'altered', 'lost its chain hash (changed or inserted by hand)')
      if (line > 0) unchained++
    } else {
      chained = true
      const hash = chainHash(previous, split.body)
      if (hash !== split.hash)
        return broken(
          expected,
          'altered',
          'does not match its chain hash (its content, or the line before it, changed)',
        )
      previous = hash
    }
    position = end + 1
    line++
  }
  if (line === 0) return broken(-1, 'unreadable', 'is missing: the file is empty')
  const events = line - 1
  if (recordedEvents !== undefined && recordedEvents > events)
    return broken(
      events,
      'truncated',
      `and after are missing: the session list recorded ${recordedEvents} events, the file holds ${events}`,
    )
  if (!previous)
    return broken(-1, 'unreadable', 'carries no chain: the session was written before dsh kept hash chains')
  return { ok: true, events, lastHash: previous, unchained }
}
