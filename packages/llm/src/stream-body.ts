// Peeking at the start of a response body without losing it: the adapter decides whether a body is an
// event stream from its first bytes when the content type does not say, then reads it from the start.

/** How many bytes are read before deciding; enough for an HTML doctype or an SSE field name. */
const PREFIX_BYTES = 512

export interface BodyPrefix {
  /** The first bytes decoded as UTF-8 (possibly fewer than PREFIX_BYTES when the body is short). */
  text: string
  /** The whole body again, prefix included. */
  stream: ReadableStream<Uint8Array>
}

/** Reads up to PREFIX_BYTES of `body`; the returned stream replays them and then the rest. */
export async function readPrefix(body: ReadableStream<Uint8Array>): Promise<BodyPrefix> {
  const reader = body.getReader()
  const head: Uint8Array[] = []
  let size = 0
  let ended = false
  while (size < PREFIX_BYTES) {
    const { value, done } = await reader.read()
    if (done) {
      ended = true
      break
    }
    head.push(value)
    size += value.byteLength
  }
  const text = new TextDecoder().decode(Buffer.concat(head).subarray(0, PREFIX_BYTES))
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of head) controller.enqueue(chunk)
      if (ended) controller.close()
    },
    async pull(controller) {
      const { value, done } = await reader.read()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    cancel: (reason) => reader.cancel(reason),
  })
  return { text, stream }
}

/** True when `text` starts like a server-sent-events body (a field or a comment line). */
export function looksLikeSse(text: string): boolean {
  return /^\s*(data|event|id|retry)?:/.test(text)
}
