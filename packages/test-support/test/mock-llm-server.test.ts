import { describe, expect, it } from 'vitest'
import { completionSteps, errorResponse, startMockLlmServer } from '../src/index.js'

const post = (url: string, body: unknown) =>
  fetch(`${url}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  })

describe('the mock Chat Completions server', () => {
  it('serves scripted responses in order, records requests, and answers unscripted ones with a clear 500', async () => {
    await using server = await startMockLlmServer({ responses: [errorResponse(402, 'Insufficient Balance')] })
    server.enqueue({ type: 'sse', steps: [{ comment: 'keep-alive' }, ...completionSteps({ text: 'hi', usage: null })] })
    const first = await post(server.url, { n: 1 })
    expect(first.status).toBe(402)
    expect(first.headers.get('x-request-id')).toBe('req-0')
    expect(await first.json()).toEqual({
      error: {
        message: 'Insufficient Balance',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_request_error',
      },
    })
    const second = await post(server.url, { n: 2 })
    expect(second.headers.get('content-type')).toContain('text/event-stream')
    const text = await second.text()
    expect(text.startsWith(': keep-alive\n\ndata: {')).toBe(true)
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
    const third = await post(server.url, { n: 3 })
    expect(third.status).toBe(500)
    expect(await third.text()).toContain('no scripted response for request #2')
    expect(server.requests.map((r) => [r.path, r.body, r.completed])).toEqual([
      ['/chat/completions', { n: 1 }, true],
      ['/chat/completions', { n: 2 }, true],
      ['/chat/completions', { n: 3 }, true],
    ])
  })

  it('injects a reset and a mid-stream disconnect, and can decide responses per request', async () => {
    await using server = await startMockLlmServer({
      respond: (request) =>
        request.body?.fault === 'reset'
          ? { type: 'reset' }
          : { type: 'sse', steps: [{ data: { partial: true } }, { delayMs: 10 }, { disconnect: true }] },
    })
    await expect(post(server.url, { fault: 'reset' })).rejects.toThrow()
    const response = await post(server.url, { fault: 'cut' })
    await expect(response.text()).rejects.toThrow()
    expect(server.requests.map((r) => r.cancelledAt)).toEqual([undefined, undefined])
    await server.close()
    await server.close()
  })
})
