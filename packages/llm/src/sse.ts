// A server-sent-events reader for chat-completion streams: splits a byte stream into events, skips
// comment lines (`: keep-alive`) and reports them separately, since they prove liveness, not progress.

export type SseItem = { type: 'data'; data: string } | { type: 'comment' }

/**
 * Characters one event (its unfinished line plus its data lines) may hold. A stream event is one token
 * delta or tool-call piece; a server that never ends a line must not grow the process without bound.
 */
export const MAX_SSE_EVENT_CHARS = 32 * 1024 * 1024

/**
 * Reads `body` into SSE items. `data:` lines of one event are joined with `\n`; an event is
 * dispatched at a blank line (or at the end of the body). Fields other than `data` are ignored.
 * Decoding errors and read failures propagate to the caller.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  maxEventChars = MAX_SSE_EVENT_CHARS,
): AsyncGenerator<SseItem> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let data: string[] = []
  let dataChars = 0
  try {
    while (true) {
      const { value, done } = await reader.read()
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true })
      if (buffer.length + dataChars > maxEventChars) {
        throw new Error(
          `one stream event is larger than ${maxEventChars} characters; the server is not sending token deltas`,
        )
      }
      let newline = buffer.search(/\r\n|\n|\r/)
      while (newline >= 0) {
        const line = buffer.slice(0, newline)
        const width = buffer.startsWith('\r\n', newline) ? 2 : 1
        // A lone '\r' at the very end may be the first half of '\r\n': wait for more bytes.
        if (!done && width === 1 && buffer[newline] === '\r' && newline === buffer.length - 1) break
        buffer = buffer.slice(newline + width)
        if (line === '') {
          if (data.length > 0) yield { type: 'data', data: data.join('\n') }
          data = []
          dataChars = 0
        } else if (line.startsWith(':')) {
          yield { type: 'comment' }
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line[5] === ' ' ? 6 : 5))
          dataChars += line.length
        }
        newline = buffer.search(/\r\n|\n|\r/)
      }
      if (done) break
    }
    if (buffer.startsWith('data:')) data.push(buffer.slice(buffer[5] === ' ' ? 6 : 5))
    if (data.length > 0) yield { type: 'data', data: data.join('\n') }
  } finally {
    // Closes the connection when the consumer stops early; a no-op on a finished body.
    reader.cancel().catch(() => {})
  }
}
