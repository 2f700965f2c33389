// Workflows in the real product: the built `dsh rpc` (base rows `workflows` and `workflow-tools`), the
// model behind the mock SSE server, outcomes read from the durable JSONL logs. A fan-out of three with
// a fan-in completes through the model's `workflow` tool; a runtime SIGKILLed after two of the three
// children finished resumes (`/workflow resume`) by running only the third child and the fan-in.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, type RecordedRequest } from '@dsh/test-support'
import { until } from '@dsh/test-support/in-process'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { of, type RpcWorld, rpcWorld } from './rpc-support.js'

const PLAN = {
  name: 'review',
  steps: [
    { id: 'review', forEach: ['alpha', 'beta', 'gamma'], concurrency: 3, prompt: 'review module {{item}}' },
    { id: 'summary', prompt: 'summarise these reviews:\n{{steps.review}}' },
  ],
}

let world: RpcWorld
/** Child requests for gamma are left hanging while this is set (the crash window). */
let hangGamma = false

const textOf = (content: unknown): string => (typeof content === 'string' ? content : JSON.stringify(content ?? ''))
const messagesOf = (request: RecordedRequest) => request.body.messages as Array<{ role: string; content: unknown }>
const isChild = (request: RecordedRequest) =>
  textOf(messagesOf(request).find((message) => message.role === 'system')?.content).includes('You are a subagent')
const taskOf = (request: RecordedRequest) =>
  textOf(
    messagesOf(request)
      .filter((message) => message.role === 'user')
      .at(-1)?.content,
  )

function respond(request: RecordedRequest) {
  if (!isChild(request)) {
    const delegated = messagesOf(request).some((message) => message.role === 'tool')
    return delegated
      ? completionResponse({ text: 'the review is done' })
      : completionResponse({
          toolCalls: [{ id: 'call-wf', name: 'workflow', arguments: JSON.stringify({ plan: PLAN }) }],
        })
  }
  const task = taskOf(request)
  const item = /review module (\w+)/.exec(task)?.[1]
  if (item === 'gamma' && hangGamma) return { type: 'hang' as const }
  if (item) return completionResponse({ text: `${item} is fine` })
  const reports = task.match(/\w+ is fine/g) ?? []
  return completionResponse({ text: `summary of ${reports.length} reviews: ${reports.join(', ')}` })
}

const client = () => world.client()
const durable = (sessionId: string) => world.log(sessionId)
const home = () => world.home
let server: MockLlmServer

beforeAll(async () => {
  world = await rpcWorld(respond)
  server = world.server
})
afterAll(() => world.close())

it('the model runs a fan-out of three children and a fan-in through the workflow tool', async () => {
  const dsh = client()
  try {
    const result = await dsh.run('review the three modules')
    expect(result).toMatchObject({ reason: 'completed', text: 'the review is done' })
    const log = durable(result.sessionId)
    const [finished] = of(log, 'workflow/finished')
    expect(finished).toMatchObject({ outcome: 'completed' })
    expect(finished?.text).toBe('summary of 3 reviews: alpha is fine, beta is fine, gamma is fine')
    // Every task is a child session whose header names the parent.
    const tasks = of(log, 'workflow/task-started')
    expect(tasks.map((task) => task.step).sort()).toEqual(['review', 'review', 'review', 'summary'])
    for (const task of tasks) {
      const header = JSON.parse(
        readFileSync(join(home(), 'sessions', `${task.childSession}.jsonl`), 'utf8').split('\n')[0] as string,
      )
      expect(header.parentSession).toBe(result.sessionId)
    }
    const toolResult = of(log, 'tool/result')[0] as { message: { content: Array<{ text: string }> } }
    expect(toolResult.message.content[0]?.text).toContain('summary of 3 reviews')
  } finally {
    await dsh.close()
  }
}, 120_000)

it('after a SIGKILL with two of three children finished, resume runs only the third and the fan-in', async () => {
  hangGamma = true
  const first = client()
  const { sessionId } = await first.createSession()
  const started = await first.command(sessionId, `/workflow run ${JSON.stringify(PLAN)}`)
  expect(started.ok).toBe(true)
  const data: unknown = started.data
  const workflowId = (data as { workflowId: string }).workflowId
  // Two children reported durably and the third is in flight: the crash window.
  await until(() => of(durable(sessionId), 'workflow/task-finished').length === 2, 60_000)
  await until(() => server.requests.some((request) => isChild(request) && taskOf(request).includes('gamma')), 30_000)
  process.kill(first.pid as number, 'SIGKILL')
  await first.close()
  const before = server.requests.length

  hangGamma = false
  const second = client()
  try {
    await second.resumeSession(sessionId)
    // The resumed log says honestly that the workflow stopped; nothing ran yet.
    await until(() => of(durable(sessionId), 'workflow/finished').length > 0, 10_000)
    expect(of(durable(sessionId), 'workflow/finished')).toEqual([
      expect.objectContaining({ workflowId, outcome: 'interrupted', synthetic: true }),
    ])
    const resumed = await second.command(sessionId, `/workflow resume ${workflowId}`)
    expect(resumed).toMatchObject({ ok: true })
    await until(() => of(durable(sessionId), 'workflow/finished').some((data) => data.outcome === 'completed'), 60_000)
    const log = durable(sessionId)
    expect(of(log, 'workflow/finished').at(-1)?.text).toBe(
      'summary of 3 reviews: alpha is fine, beta is fine, gamma is fine',
    )
    // After the restart only gamma and the summary ran: no child was asked about alpha or beta again.
    const asked = server.requests.slice(before).filter(isChild).map(taskOf)
    expect(asked.filter((task) => /review module (alpha|beta)/.test(task))).toEqual([])
    expect(asked.filter((task) => task.includes('review module gamma'))).toHaveLength(1)
    const resumedAt = log.findIndex((event) => event.type === 'workflow/resumed')
    const rerun = log.slice(resumedAt).filter((event) => event.type === 'workflow/task-started')
    expect(rerun.map((event) => [event.data.step, event.data.item ?? null])).toEqual([
      ['review', 'gamma'],
      ['summary', null],
    ])
  } finally {
    await second.close()
  }
}, 180_000)
