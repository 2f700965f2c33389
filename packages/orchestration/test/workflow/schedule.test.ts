// Schedules in the real `dsh rpc` runtime (the rpc bundle sets `fire: true`) with the model behind the
// mock SSE server: a 2-second schedule fires exactly once; set, SIGKILL the runtime, start another and
// resume the session: it fires exactly once (on time, or late and reported as missed), never twice.
// `dsh run` (headless) refuses to set one.
import { spawnSync } from 'node:child_process'
import { completionResponse, type MockLlmServer, type RecordedRequest } from '@dsh/test-support'
import { until } from '@dsh/test-support/in-process'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { textOf } from './harness.js'
import { cliPath, of, type RpcWorld, rpcWorld } from './rpc-support.js'

let world: RpcWorld
let server: MockLlmServer

const asks = (word: string) =>
  server.requests.filter((request: RecordedRequest) =>
    (request.body.messages as Array<{ role: string; content: unknown }>).some(
      (message) => message.role === 'user' && textOf(message.content).includes(word),
    ),
  ).length
const client = () => world.client()
const logged = (sessionId: string, type: string) => of(world.log(sessionId), type)
const settle = () => new Promise((resolve) => setTimeout(resolve, 3000))

beforeAll(async () => {
  world = await rpcWorld(() => completionResponse({ text: 'tock' }))
  server = world.server
})
afterAll(() => world.close())

it('a 2-second schedule fires once in a running dsh rpc', async () => {
  const dsh = client()
  try {
    const { sessionId } = await dsh.createSession()
    const set = await dsh.command(sessionId, '/schedule in 2s say tick-one')
    expect(set).toMatchObject({ ok: true })
    await until(() => asks('say tick-one') > 0, 30_000)
    await settle()
    expect(asks('say tick-one')).toBe(1)
    expect(logged(sessionId, 'schedule/fired')).toHaveLength(1)
    expect((await dsh.command(sessionId, '/schedule list')).text).toBe('no pending schedules')
  } finally {
    await dsh.close()
  }
}, 90_000)

it('set, runtime killed, another runtime resumes the session: it fires once', async () => {
  const first = client()
  const { sessionId } = await first.createSession()
  expect(await first.command(sessionId, '/schedule in 2s say tick-two')).toMatchObject({ ok: true })
  await until(() => logged(sessionId, 'schedule/set').length === 1, 10_000)
  process.kill(first.pid as number, 'SIGKILL')
  await first.close()
  expect(asks('say tick-two')).toBe(0)

  const second = client()
  try {
    await second.resumeSession(sessionId)
    await until(() => asks('say tick-two') > 0, 30_000)
    await settle()
    expect(asks('say tick-two')).toBe(1)
    expect(logged(sessionId, 'schedule/fired')).toHaveLength(1)
    // A restart slower than the delay is reported as a miss before the late firing.
    const missed = logged(sessionId, 'schedule/missed')
    expect(missed.length).toBe(logged(sessionId, 'schedule/fired')[0]?.late ? 1 : 0)
  } finally {
    await second.close()
  }
}, 120_000)

it('dsh run refuses to set a schedule and says where it works', () => {
  const result = spawnSync(process.execPath, [cliPath, 'run', '/schedule in 1m hello'], {
    cwd: world.home,
    env: world.env(),
    encoding: 'utf8',
    timeout: 60_000,
  })
  expect(`${result.stdout}${result.stderr}`).toMatch(/dsh rpc or dsh web/)
}, 90_000)
