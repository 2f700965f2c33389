// A loop survives a SIGKILL of its runtime: the built `dsh rpc` runs `/loop` in a temp repo whose check
// passes once answer.txt says 42; it is killed while the second attempt's child waits for the model.
// After a restart the log says the loop was interrupted, and `/loop resume` continues with attempt 2
// (told the first check's output, folded from the log) without running attempt 1 again.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse, type RecordedRequest } from '@dsh/test-support'
import { until } from '@dsh/test-support/in-process'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { hasToolResult, isChild, taskOf } from './harness.js'
import { of, type RpcWorld, rpcWorld } from './rpc-support.js'

let world: RpcWorld
let repo: string
/** The second attempt's child waits forever while this is set (the crash window). */
let hangSecond = true

function respond(request: RecordedRequest) {
  if (!isChild(request)) return completionResponse({ text: 'ok' })
  if (hasToolResult(request)) return completionResponse({ text: 'I wrote the answer' })
  const task = taskOf(request)
  if (!task.includes('This is attempt')) return completionResponse({ text: 'I looked and changed nothing' })
  if (hangSecond) return { type: 'hang' as const }
  return completionResponse({
    toolCalls: [
      { id: 'call-w', name: 'write', arguments: JSON.stringify({ path: join(repo, 'answer.txt'), content: '42' }) },
    ],
  })
}

beforeAll(async () => {
  world = await rpcWorld(respond)
  repo = join(world.home, 'repo')
  mkdirSync(repo)
  writeFileSync(
    join(repo, 'test.sh'),
    'test "$(cat answer.txt 2>/dev/null)" = 42 || { echo "FAIL: answer.txt should say 42"; exit 1; }\n',
  )
})
afterAll(() => world.close())

it('a loop killed mid-way resumes at the next attempt without redoing finished ones', async () => {
  const first = world.client()
  const { sessionId } = await first.createSession({ cwd: repo })
  const started = await first.command(sessionId, '/loop "make the test pass" --until "sh test.sh" --max 5')
  expect(started.ok).toBe(true)
  const result: unknown = started.data
  const loopId = typeof result === 'object' && result !== null && 'loopId' in result ? String(result.loopId) : ''
  expect(loopId).not.toBe('')
  // Attempt 1 and its failing check are durable; attempt 2's child is waiting on the model.
  await until(() => of(world.log(sessionId), 'loop/iteration').length === 1, 60_000)
  await until(() => world.server.requests.some((r) => isChild(r) && taskOf(r).includes('This is attempt 2')), 30_000)
  process.kill(first.pid as number, 'SIGKILL')
  await first.close()
  const before = world.server.requests.length

  hangSecond = false
  const second = world.client()
  try {
    await second.resumeSession(sessionId)
    await until(() => of(world.log(sessionId), 'loop/finished').length > 0, 10_000)
    expect(of(world.log(sessionId), 'loop/finished')).toEqual([
      expect.objectContaining({ loopId, outcome: 'interrupted', iterations: 1, synthetic: true }),
    ])
    expect(await second.command(sessionId, `/loop resume ${loopId}`)).toMatchObject({ ok: true })
    await until(() => of(world.log(sessionId), 'loop/finished').some((data) => data.outcome === 'passed'), 60_000)
    const log = world.log(sessionId)
    expect(of(log, 'loop/resumed')).toEqual([{ loopId, origin: 'command', iteration: 2 }])
    expect(of(log, 'loop/iteration').map((data) => [data.iteration, data.passed])).toEqual([
      [1, false],
      [2, true],
    ])
    expect(of(log, 'loop/finished').at(-1)).toMatchObject({ outcome: 'passed', iterations: 2 })
    expect(readFileSync(join(repo, 'answer.txt'), 'utf8')).toBe('42')
    // After the restart no child ran attempt 1 again; attempt 2 was told the first check's output.
    const asked = world.server.requests.slice(before).filter(isChild).map(taskOf)
    expect(asked.filter((task) => !task.includes('This is attempt'))).toEqual([])
    expect(asked[0]).toContain('This is attempt 2 of at most 5')
    expect(asked[0]).toContain('FAIL: answer.txt should say 42')
  } finally {
    await second.close()
  }
}, 180_000)
