// The shipped guard rows as `dsh run` users get them (base bundle, mock model server): the repeat-call
// breaker changes what the model's next request says and stops a stuck turn.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-guards-'))
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

const readMissing = (id: string) =>
  completionResponse({ toolCalls: [{ id, name: 'read', arguments: JSON.stringify({ path: 'missing.txt' }) }] })

/** The text of the last tool message of a recorded request. */
function lastToolText(index: number): string {
  const messages = server.requests[index]?.body.messages as Array<{ role: string; content: unknown }>
  return String(messages.filter((message) => message.role === 'tool').at(-1)?.content ?? '')
}

describe('shipped guards through dsh run', () => {
  it('the repeat-call breaker: the request after the third identical failure tells the model to change approach; the fifth stops the turn', async () => {
    for (let i = 1; i <= 6; i++) server.enqueue(readMissing(`r${i}`))
    const result = await runDsh(['run', 'read missing.txt'], { home, modelUrl: server.url })
    // Requests 2 and 3 carry plain failures; request 4 (after the third) names the breaker.
    expect([1, 2, 3].map((i) => lastToolText(i).includes('repeat-call breaker'))).toEqual([false, false, true])
    expect(lastToolText(3)).toMatch(/This exact read call \(same arguments\) has now failed 3 times/)
    // The fourth and fifth identical calls never ran; then the turn stopped without asking the model again.
    expect(server.requests).toHaveLength(5)
    const events = durableEvents(home)
    expect(eventData(events, 'tool/result').map((data) => data.code)).toEqual([
      'FS_NOT_FOUND',
      'FS_NOT_FOUND',
      'FS_NOT_FOUND',
      'DENIED',
      'DENIED',
    ])
    expect(eventData(events, 'turn/end')).toEqual([
      { reason: 'blocked', message: expect.stringMatching(/^repeat-call breaker: the same read call failed 5 times/) },
    ])
    expect(result.code).toBe(8)
  })

  it('a patch disables the breaker row: the same failures just continue', async () => {
    for (let i = 1; i <= 4; i++) server.enqueue(readMissing(`r${i}`))
    server.enqueue(completionResponse({ text: 'gave up' }))
    const patch = join(home, 'no-breaker.yml')
    writeFileSync(patch, '- id: guard-repeat\n  disabled: true\n')
    const result = await runDsh(['--patch', patch, 'run', 'read missing.txt'], { home, modelUrl: server.url })
    expect(result.code).toBe(0)
    expect([1, 2, 3, 4].some((i) => lastToolText(i).includes('repeat-call breaker'))).toBe(false)
  })
})
