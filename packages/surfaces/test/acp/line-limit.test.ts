// The ACP input bound: a 32 MiB line is dropped while it streams in (reported once, never held whole)
// and the next message passes through intact.
import { describe, expect, it } from 'vitest'
import { limitLines } from '../../src/acp/line-limit.js'

describe('ACP line limit', () => {
  it('drops an over-long line as it arrives and passes the next one', async () => {
    let refusals = 0
    const limiter = limitLines(1024 * 1024, () => {
      refusals++
    })
    const writer = limiter.writable.getWriter()
    const out: Uint8Array[] = []
    const reading = (async () => {
      for await (const chunk of limiter.readable as unknown as AsyncIterable<Uint8Array>) out.push(chunk)
    })()
    const chunk = new Uint8Array(1024 * 1024).fill(0x78)
    await writer.write(new TextEncoder().encode('{"first":1}\n'))
    for (let i = 0; i < 16; i++) await writer.write(chunk)
    // Half of the 32 MiB line is in: it was refused already and nothing of it went through.
    expect(refusals).toBe(1)
    for (let i = 0; i < 16; i++) await writer.write(chunk)
    await writer.write(new TextEncoder().encode('\n{"next":2}\n'))
    await writer.close()
    await reading
    expect(Buffer.concat(out).toString()).toBe('{"first":1}\n{"next":2}\n')
    expect(refusals).toBe(1)
  })
})
