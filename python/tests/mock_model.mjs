// The mock DeepSeek SSE server of @dsh/test-support, driven over stdin/stdout for the Python tests:
// prints {"url"} once, then answers one JSON command per line:
// {"enqueue": [CompletionScript, ...]} -> {"ok": true}; {"requests": true} -> {"bodies": [...]}.
import { createInterface } from 'node:readline'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'

const server = await startMockLlmServer()
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`)
const lines = createInterface({ input: process.stdin })
lines.on('line', (line) => {
  const command = JSON.parse(line)
  if (command.enqueue) {
    server.enqueue(...command.enqueue.map((script) => completionResponse(script)))
    process.stdout.write(`${JSON.stringify({ ok: true })}\n`)
  } else if (command.requests) {
    process.stdout.write(`${JSON.stringify({ bodies: server.requests.map((request) => request.body) })}\n`)
  }
})
lines.on('close', () => void server.close())
