// The `fetch` a Streamable HTTP MCP connection uses: every response body is counted while it arrives
// and errored past `maxMessageBytes`, so a server that answers with an endless or huge body is cut at
// the bound the stdio transport has (issue 34) instead of being read whole by the SDK (`response.json()`
// or its SSE parser, which buffers one event until its blank line). A JSON body is bounded as a whole;
// an SSE body per event (the bytes since the last blank line), so a long-lived stream of small
// messages is not cut. Errors carry OVERFLOW_MARKER, which the connection recognises in `onerror`.

/** In the error a cut body raises (and so in the SDK's `onerror` messages that wrap it). */
export const OVERFLOW_MARKER = 'MCP message over maxMessageBytes'

/** Bytes of the current SSE event: counts non-terminator bytes, resets at a blank line (any of \n, \r, \r\n). */
class SseEventCounter {
  private bytes = 0
  private lineEmpty = true
  private afterCr = false

  /** Adds a chunk; returns the size of the event in progress at its largest within the chunk. */
  add(chunk: Uint8Array): number {
    let largest = this.bytes
    for (const byte of chunk) {
      if (byte === 0x0a && this.afterCr) {
        this.afterCr = false
        continue
      }
      this.afterCr = byte === 0x0d
      if (byte === 0x0a || byte === 0x0d) {
        if (this.lineEmpty) this.bytes = 0
        this.lineEmpty = true
        continue
      }
      this.lineEmpty = false
      this.bytes++
      if (this.bytes > largest) largest = this.bytes
    }
    return largest
  }
}

/** A body that yields `body`'s bytes and errors (cancelling `body`) once `measure` passes `limit`. */
function boundedBody(
  body: ReadableStream<Uint8Array>,
  limit: number,
  measure: (chunk: Uint8Array) => number,
  what: string,
): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: Awaited<ReturnType<typeof reader.read>>
      try {
        next = await reader.read()
      } catch (error) {
        controller.error(error)
        return
      }
      if (next.done) {
        controller.close()
        return
      }
      if (measure(next.value) > limit) {
        controller.error(new Error(`${OVERFLOW_MARKER}: ${what} passed ${limit} bytes and was cut while it arrived`))
        await reader.cancel().catch(() => {})
        return
      }
      controller.enqueue(next.value)
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  })
}

/** Wraps `baseFetch` so each response body is bounded by `limit` bytes per message (see the file comment). */
export function boundedFetch(limit: number, baseFetch: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await baseFetch(input, init)
    if (!response.body) return response
    const type = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase()
    let body: ReadableStream<Uint8Array>
    if (type === 'text/event-stream') {
      const counter = new SseEventCounter()
      body = boundedBody(response.body, limit, (chunk) => counter.add(chunk), 'an event of the SSE response')
    } else {
      let total = 0
      body = boundedBody(
        response.body,
        limit,
        (chunk) => {
          total += chunk.byteLength
          return total
        },
        'the response body',
      )
    }
    const bounded = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    })
    // What the SDK reads besides the body (redirect messages name the response's URL).
    Object.defineProperties(bounded, {
      url: { value: response.url },
      redirected: { value: response.redirected },
      type: { value: response.type },
    })
    return bounded
  }
}
