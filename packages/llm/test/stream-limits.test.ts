// A model stream cannot hold dsh forever (issue 34): a server that keeps trickling data (each event
// within the idle bound) is cut at the row's `responseTimeoutMs`, with a TIMEOUT naming that option,
// and the connection is closed. Over real HTTP against the mock SSE server.
import { performance } from 'node:perf_hooks'
import { chunkEvent, type SseStep, startMockLlmServer } from '@dsh/test-support'
import { expect, it } from 'vitest'
import deepseek from '../src/deepseek.js'
import { assembleMessage, type Message } from '../src/index.js'
import { bootLlm, tempDir } from './helpers.js'

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] })

it('a trickling stream ends at responseTimeoutMs with TIMEOUT naming the option', async () => {
  const server = await startMockLlmServer()
  await using dir = await tempDir()
  const { ctx, dispose } = await bootLlm(
    deepseek,
    { baseUrl: server.url, idleTimeoutMs: 1_000, responseTimeoutMs: 600 },
    { home: dir.path },
  )
  try {
    // One token every 50 ms for 30 s: never idle, never done.
    const steps: SseStep[] = []
    for (let i = 0; i < 600; i++) steps.push({ data: chunkEvent({ content: 'x' }) }, { delayMs: 50 })
    server.enqueue({ type: 'sse', steps })
    const started = performance.now()
    const message = await assembleMessage(ctx.llm.stream({}, { messages: [user('hi')] }))
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(message).toMatchObject({ finishReason: 'error', error: { code: 'TIMEOUT' } })
    expect(message.error?.message).toMatch(/responseTimeoutMs/)
    // The tokens before the cut are kept; the server saw the client leave.
    expect((message.content[0] as { text: string }).text).toMatch(/^x+$/)
    await server.waitForCancel(0)
  } finally {
    await dispose()
    await server.close()
  }
}, 20_000)

it('one event larger than the bound ends the read instead of growing the buffer', async () => {
  const { readSse } = await import('../src/sse.js')
  const bytes = new TextEncoder().encode(`data: ${'y'.repeat(5_000)}`)
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(bytes) // never a newline
    },
  })
  const read = async () => {
    for await (const _item of readSse(body, 100_000)) {
    }
  }
  await expect(read()).rejects.toThrow(/larger than 100000 characters/)
})
