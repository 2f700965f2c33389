// The counting fetch of Streamable HTTP MCP connections: an SSE body is bounded per event whatever
// its line endings (\n, \r\n, \r), a JSON body as a whole, and a cut body says which bound it passed.
import { describe, expect, it } from 'vitest'
import { boundedFetch, OVERFLOW_MARKER } from '../../src/mcp/bounded-fetch.js'

const answer = (body: string, type: string) => async () =>
  new Response(body, { status: 200, headers: { 'content-type': type } })

describe('boundedFetch', () => {
  it.each([
    ['\\n', '\n'],
    ['\\r\\n', '\r\n'],
    ['\\r', '\r'],
  ])('lets many small SSE events separated by %s through a small bound', async (_name, eol) => {
    const event = `event: message${eol}data: ${'x'.repeat(50)}${eol}${eol}`
    const fetch = boundedFetch(200, answer(event.repeat(100), 'text/event-stream'))
    expect(await (await fetch('http://127.0.0.1/')).text()).toBe(event.repeat(100))
  })

  it('cuts one SSE event (data lines without the blank line) past the bound', async () => {
    const fetch = boundedFetch(
      200,
      answer(`data: ${'x'.repeat(150)}\ndata: ${'y'.repeat(150)}\n\n`, 'text/event-stream'),
    )
    await expect((await fetch('http://127.0.0.1/')).text()).rejects.toThrow(OVERFLOW_MARKER)
  })

  it('bounds a JSON body as a whole, and keeps status and headers', async () => {
    const small = await boundedFetch(200, answer('{"a":1}', 'application/json; charset=utf-8'))('http://127.0.0.1/')
    expect(small.status).toBe(200)
    expect(small.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(await small.json()).toEqual({ a: 1 })
    const large = await boundedFetch(
      200,
      answer(JSON.stringify({ a: 'z'.repeat(300) }), 'application/json'),
    )('http://127.0.0.1/')
    await expect(large.json()).rejects.toThrow(/MCP message over maxMessageBytes: the response body passed 200 bytes/)
  })
})
