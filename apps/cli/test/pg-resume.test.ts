// Picking a session up on another machine through the shared PostgreSQL store (issue 39): two `dsh`
// hosts (each its own DSH_HOME) on one throwaway cluster. A session host A ran and released resumes on
// host B with its history; while A holds it, B's `--resume` is refused naming A's process and host.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { type Postgres, postgresBin, startPostgres } from '@dsh/test-support/postgres'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'
import { runDsh, startDsh } from './dsh-child.js'

let root: string
let cluster: Postgres
let server: MockLlmServer
const host = (name: string) => ({
  home: join(root, name),
  cwd: join(root, 'work'),
  env: { DSH_SESSION_STORE: cluster.url() },
  get modelUrl() {
    return server.url
  },
})

beforeAll(async () => {
  if (!postgresBin()) throw new Error('PostgreSQL is not installed: apt-get install postgresql (.ci/run installs it)')
  root = mkdtempSync(join(tmpdir(), 'dsh-pg-resume-'))
  for (const dir of ['a', 'b', 'work']) mkdirSync(join(root, dir))
  cluster = await startPostgres()
  server = await startMockLlmServer()
}, 60_000)
afterAll(async () => {
  await server?.close()
  await cluster?.stop()
  rmSync(root, { recursive: true, force: true })
})

it('host B resumes what host A released, with its history; while A holds it, B is told who does', async () => {
  server.enqueue(completionResponse({ text: 'Paris.' }))
  const first = await runDsh(['run', '--output', 'json', 'Capital of France?'], host('a'))
  expect(first.code, first.stderr).toBe(0)
  const id = JSON.parse(first.stdout).sessionId as string

  server.enqueue(completionResponse({ text: 'Berlin.' }))
  const before = server.requests.length
  const second = await runDsh(['run', '--resume', id, 'And Germany?'], host('b'))
  expect(second.code, second.stderr).toBe(0)
  const body = JSON.stringify((server.requests[before] as RecordedRequest).body)
  expect(body).toContain('Capital of France?')
  expect(body).toContain('Paris.')
  expect(body).toContain('And Germany?')

  // A holds it now: its model answer is slow, so the lease stays taken while B tries.
  server.enqueue(completionResponse({ text: 'Rome.', delayMs: 4000 }), completionResponse({ text: 'never sent' }))
  const holding = startDsh(['run', '--resume', id, 'And Italy?'], host('a'))
  await server.waitForRequests(before + 2, 20_000)
  const refused = await runDsh(['run', '--resume', id, 'And Spain?'], host('b'))
  expect(refused.code).toBe(ExitCode.SESSION_BUSY)
  expect(refused.stderr).toContain(`pid ${holding.proc.pid} on ${hostname()}`)
  expect((await holding.exited).code).toBe(0)
  expect(server.requests.length).toBe(before + 2)
}, 90_000)

it('dsh agents on host B lists the session host A is running on the shared store', async () => {
  let release!: () => void
  const gate = new Promise<void>((done) => {
    release = done
  })
  const response = completionResponse({ text: 'Madrid.' })
  if (response.type !== 'sse') throw new Error('expected an SSE response')
  // Its own model: the shared one may still hold a response an earlier test queued and never used.
  const model = await startMockLlmServer({ responses: [{ ...response, steps: [{ until: gate }, ...response.steps] }] })
  const running = startDsh(['run', 'Capital of Spain?'], { ...host('a'), modelUrl: model.url })
  await model.waitForRequests(1, 20_000)
  // The session's first rows reach the store a moment after its first request (write-behind).
  type Row = { sessionId: string; state: string; pid?: number; host?: string; cwd: string }
  let rows: Row[] = []
  for (let tries = 0; tries < 40 && !rows.some((row) => row.pid === running.proc.pid); tries++) {
    const listed = await runDsh(['agents', '--json'], host('b'))
    expect(listed.code, listed.stderr).toBe(0)
    rows = JSON.parse(listed.stdout) as Row[]
    if (!rows.some((row) => row.pid === running.proc.pid)) await new Promise((done) => setTimeout(done, 250))
  }
  release()
  expect(rows).toContainEqual(
    expect.objectContaining({ state: 'running', pid: running.proc.pid, host: hostname(), cwd: join(root, 'work') }),
  )
  expect((await running.exited).code).toBe(0)
  await model.close()
}, 90_000)
