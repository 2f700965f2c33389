// The recovery plugin against the mock server's faults over real HTTP (deepseek adapter): 429 with
// Retry-After, 503, a mid-stream disconnect. Waits go through an injected sleep that records the
// delay, so timing is asserted without sleeping; one test uses the real sleep to check cancellation.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import deepseek from '@dsh/llm/deepseek'
import { type AnySessionEvent, type Session, SessionService } from '@dsh/session'
import CredentialsService from '@dsh/settings/credentials'
import {
  chunkEvent,
  completionResponse,
  errorResponse,
  type MockLlmServer,
  type MockResponse,
  startMockLlmServer,
} from '@dsh/test-support'
import { afterEach, describe, expect, it } from 'vitest'
import type { RetryConfig } from '../src/retry.js'
import { createContextHarness } from './harness.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})

async function setup(responses: MockResponse[], retry: RetryConfig | false) {
  const dir = await mkdtemp(join(tmpdir(), 'dsh-retry-'))
  const server: MockLlmServer = await startMockLlmServer({ responses })
  cleanups.push(async () => {
    await server.close()
    await rm(dir, { recursive: true, force: true })
  })
  const root: Context = await createContextHarness({
    provider: 'deepseek',
    model: 'deepseek-v4-pro',
    retry,
    before: async (r) => {
      await r.plugin(CredentialsService, {
        env: { DEEPSEEK_API_KEY: 'sk-retry', DEEPSEEK_BASE_URL: server.url },
        home: dir,
        cwd: dir,
      })
      await r.plugin(deepseek, {})
    },
  })
  return { root, server }
}

/** A sleep that records each wait and returns at once. */
function recordingSleep() {
  const waits: number[] = []
  return { waits, sleep: async (ms: number) => void waits.push(ms) }
}

const disconnect: MockResponse = {
  type: 'sse',
  steps: [{ data: chunkEvent({ role: 'assistant', content: 'Hel' }) }, { disconnect: true }],
}

function step(session: Session): string[] {
  return session.events
    .filter((e) => e.type !== 'assistant/chunk' && e.type !== 'agent/inbox/spliced')
    .map((e: AnySessionEvent) => e.type)
}

const retries = (session: Session) => session.events.filter((e) => e.type === 'recovery/retry').map((e) => e.data)

describe('the recovery plugin', () => {
  it('honours Retry-After on a 429 and logs the retry in the open step', async () => {
    const clock = recordingSleep()
    const { root, server } = await setup(
      [
        errorResponse(429, 'Rate limit reached', { headers: { 'retry-after': '2' } }),
        completionResponse({ text: 'ok' }),
      ],
      { sleep: clock.sleep, random: () => 0.5 },
    )
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(server.requests).toHaveLength(2)
    expect(clock.waits).toEqual([2000])
    expect(retries(agent.session)).toEqual([
      {
        attempt: 1,
        maxAttempts: 4,
        code: 'RATE_LIMIT',
        status: 429,
        retryAfterMs: 2000,
        delayMs: 2000,
        message: expect.any(String),
      },
    ])
    expect(step(agent.session)).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'request/header',
      'request/context',
      'recovery/retry',
      'request/header',
      'request/context',
      'assistant/message',
      'step/end',
      'turn/end',
    ])
    // The same provider and model on both attempts: no silent switch.
    const headers = agent.session.events.filter((e) => e.type === 'request/header').map((e) => e.data)
    expect(headers.map((h) => (h as { config: unknown }).config)).toEqual([
      (headers[0] as { config: unknown }).config,
      (headers[0] as { config: unknown }).config,
    ])
    expect(server.requests.map((r) => (r.body as { model: string }).model)).toEqual([
      'deepseek-v4-pro',
      'deepseek-v4-pro',
    ])
    expect(agent.session.events.at(-1)?.data).toEqual({ reason: 'completed' })
    // The facts are ignorable: a reader without this row still loads the log.
    const bare = new Context()
    await bare.plugin(SessionService)
    const copy = bare.sessions.build(agent.session.header, JSON.parse(JSON.stringify(agent.session.events)))
    expect(copy.length).toBe(agent.session.length)
  })

  it('backs off exponentially with jitter and a cap across a 503 and a disconnect', async () => {
    const clock = recordingSleep()
    const { root, server } = await setup(
      [
        errorResponse(503, 'Service Unavailable', { type: 'server_error' }),
        disconnect,
        errorResponse(503, 'Service Unavailable', { type: 'server_error' }),
        completionResponse({ text: 'finally' }),
      ],
      { sleep: clock.sleep, random: () => 0.5, jitter: 0.5, baseDelayMs: 100, maxDelayMs: 300 },
    )
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(server.requests).toHaveLength(4)
    // 100, 200, 400 capped at 300; each times (1 - 0.5 * 0.5).
    expect(clock.waits).toEqual([75, 150, 225])
    expect(
      retries(agent.session).map((r) => [(r as { code: string }).code, (r as { attempt: number }).attempt]),
    ).toEqual([
      ['PROVIDER_UNAVAILABLE', 1],
      ['NETWORK', 2],
      ['PROVIDER_UNAVAILABLE', 3],
    ])
    expect(agent.session.deriveMessages().at(-1)?.content).toEqual([{ type: 'text', text: 'finally' }])
  })

  it('gives up after maxAttempts and the turn ends with the error', async () => {
    const clock = recordingSleep()
    const { root, server } = await setup(
      [
        errorResponse(503, 'overloaded', { type: 'server_error' }),
        errorResponse(503, 'overloaded', { type: 'server_error' }),
        errorResponse(503, 'overloaded', { type: 'server_error' }),
      ],
      { sleep: clock.sleep, maxAttempts: 2 },
    )
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(server.requests).toHaveLength(3)
    expect(retries(agent.session)).toHaveLength(2)
    expect(agent.session.events.filter((e) => e.type === 'recovery/give-up').map((e) => e.data)).toEqual([
      { code: 'PROVIDER_UNAVAILABLE', attempts: 2, reason: '2 retries did not help' },
    ])
    expect(agent.session.events.at(-1)?.data).toMatchObject({ reason: 'error' })
  })

  it('does not retry what is not transient', async () => {
    const clock = recordingSleep()
    const { root, server } = await setup([errorResponse(400, 'Invalid tool_choice')], { sleep: clock.sleep })
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(server.requests).toHaveLength(1)
    expect(retries(agent.session)).toEqual([])
    expect(agent.session.events.at(-1)?.data).toMatchObject({ reason: 'error' })
  })

  it('without the row (disabled), a 429 is not retried', async () => {
    const { root, server } = await setup(
      [
        errorResponse(429, 'Rate limit reached', { headers: { 'retry-after': '1' } }),
        completionResponse({ text: 'x' }),
      ],
      false,
    )
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    expect(server.requests).toHaveLength(1)
    expect(retries(agent.session)).toEqual([])
    expect(agent.session.events.at(-1)?.data).toMatchObject({ reason: 'error' })
  })

  it('stops waiting at once when the turn is cancelled', async () => {
    const { root, server } = await setup([errorResponse(503, 'overloaded', { type: 'server_error' })], {
      baseDelayMs: 60_000,
      maxDelayMs: 60_000,
      jitter: 0,
    })
    const agent = await root.agents.create()
    const logged = new Promise<void>((resolve) => {
      root.on('session/event', (_session, event) => {
        if (event.type === 'recovery/retry') resolve()
      })
    })
    agent.followup('hi')
    await logged
    const started = performance.now()
    await agent.cancel()
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(server.requests).toHaveLength(1)
    expect(retries(agent.session)).toMatchObject([{ delayMs: 60_000 }])
    expect(agent.session.events.at(-1)?.data).toMatchObject({ reason: 'aborted' })
  })
})
