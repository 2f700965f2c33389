// A bound on the length of one newline-delimited message before the ACP SDK's reader sees it: a
// longer line is dropped as soon as it passes the bound (never held whole) and reported once, so the
// agent answers it with a JSON-RPC error and goes on with the next line.

/** Default bound of one message: 16 MiB. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024

/**
 * Passes whole lines through; holds at most `maxBytes` of an unfinished line. `onTooLong` is called
 * once per dropped line, when it passes the bound.
 */
export function limitLines(maxBytes: number, onTooLong: () => void): TransformStream<Uint8Array, Uint8Array> {
  let pending: Uint8Array[] = []
  let pendingBytes = 0
  let skipping = false
  return new TransformStream({
    transform(chunk, controller) {
      let start = 0
      while (start <= chunk.length) {
        const newline = chunk.indexOf(0x0a, start)
        const end = newline < 0 ? chunk.length : newline + 1
        if (skipping) {
          if (newline < 0) return
          skipping = false
        } else if (pendingBytes + (end - start) > maxBytes + (newline < 0 ? 0 : 1)) {
          pending = []
          pendingBytes = 0
          onTooLong()
          if (newline < 0) {
            skipping = true
            return
          }
        } else if (newline < 0) {
          if (end > start) {
            pending.push(chunk.subarray(start, end))
            pendingBytes += end - start
          }
          return
        } else {
          for (const piece of pending) controller.enqueue(piece)
          controller.enqueue(chunk.subarray(start, end))
          pending = []
          pendingBytes = 0
        }
        start = end
      }
    },
    flush(controller) {
      if (!skipping) for (const piece of pending) controller.enqueue(piece)
    },
  })
}

/** The JSON-RPC error line for a dropped message (its id is unknown: `null`). */
export function tooLongReply(maxBytes: number): string {
  return `${JSON.stringify({
    jsonrpc: '2.0',
    id: null,
    error: { code: -32600, message: `invalid request: a message longer than ${maxBytes} bytes` },
  })}\n`
}
