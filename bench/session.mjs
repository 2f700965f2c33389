// Session log benchmarks: append+flush throughput per backend, cold load of a 100k-event session
// against plain JSON.parse of the same lines, and append+derive cost at 100 vs 10,000 events.
// Every figure is printed beside a baseline measured in this run. Needs `npm run build`.
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import SessionService from '@dsh/session'
import JsonlSessionStore from '@dsh/session/store/jsonl'
import SqliteSessionStore from '@dsh/session/store/sqlite'
import { bootSessions } from './lib/sessions.mjs'

const tick = () => new Promise((resolve) => setImmediate(resolve))
const now = () => Number(process.hrtime.bigint()) / 1e6
const append = { surfaceOp: { op: 'append' } }
const text = (t) => [{ type: 'text', text: t }]

/** One agent-like event by index: mostly chunks and messages of a few hundred bytes. */
function addEvent(session, i) {
  switch (i % 5) {
    case 0:
      return session.append(
        'user/message',
        { message: { role: 'user', content: text(`question ${i} ${'q'.repeat(120)}`) } },
        append,
      )
    case 1:
    case 2:
      return session.append('assistant/chunk', { chunk: { type: 'text-delta', text: `part ${i} ${'c'.repeat(60)}` } })
    case 3:
      return session.append(
        'assistant/message',
        { message: { role: 'assistant', content: text(`answer ${i} ${'a'.repeat(200)}`), finishReason: 'stop' } },
        append,
      )
    default:
      return session.append('request/context', { contextWindow: 128000, route: 'bench' })
  }
}

async function throughput(name, store, events, every) {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-'))
  const { ctx, dispose } = await bootSessions(store, dir)
  const session = ctx.sessions.create({ id: 'bench' })
  await ctx.sessions.flush(session)
  const start = now()
  for (let i = 0; i < events; i++) {
    addEvent(session, i)
    if ((i + 1) % every === 0) await ctx.sessions.flush(session)
  }
  await ctx.sessions.flush(session)
  const ms = now() - start
  const lines = session.events.map((e) => `${JSON.stringify(e)}\n`)
  await dispose()
  rmSync(dir, { recursive: true, force: true })
  return { name, ms, lines }
}

/** Baseline: write the same lines in the same batches with fdatasync, no harness. */
function rawWrite(lines, every) {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-'))
  const fd = openSync(join(dir, 'raw.jsonl'), 'w')
  const start = now()
  for (let i = 0; i < lines.length; i += every) {
    writeSync(fd, lines.slice(i, i + every).join(''))
    fdatasyncSync(fd)
  }
  const ms = now() - start
  closeSync(fd)
  rmSync(dir, { recursive: true, force: true })
  return ms
}

const rate = (events, ms) => `${Math.round(events / (ms / 1000)).toLocaleString('en')} events/s`

// 1. append + flush throughput
const EVENTS = 20_000
const EVERY = 100
const baseline = rawWrite((await throughput('warmup', JsonlSessionStore, 2000, EVERY)).lines, EVERY)
void baseline
for (const [name, store] of [
  ['jsonl', JsonlSessionStore],
  ['sqlite', SqliteSessionStore],
]) {
  const run = await throughput(name, store, EVENTS, EVERY)
  const raw = rawWrite(run.lines, EVERY)
  console.log(
    `append+flush ${name}: ${rate(EVENTS, run.ms)} (flush every ${EVERY}); raw write+fdatasync of the same lines: ${rate(EVENTS, raw)}; ratio ${(run.ms / raw).toFixed(2)}x`,
  )
}

// 2. cold load of a 100k-event session vs JSON.parse of its lines
{
  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-'))
  const { ctx, dispose } = await bootSessions(JsonlSessionStore, dir)
  const session = ctx.sessions.create({ id: 'big' })
  for (let i = 0; i < 100_000; i++) addEvent(session, i)
  await ctx.sessions.flush(session)
  await ctx.sessionPersistence.close(session)
  const path = join(dir, 'big.jsonl')
  const best = (fn) => {
    let min = Number.POSITIVE_INFINITY
    return (async () => {
      for (let r = 0; r < 3; r++) {
        const start = now()
        await fn()
        min = Math.min(min, now() - start)
      }
      return min
    })()
  }
  const parse = await best(() => {
    const lines = readFileSync(path, 'utf8').split('\n')
    for (const line of lines) if (line) JSON.parse(line)
  })
  const load = await best(() => ctx.sessionPersistence.read('big'))
  const resume = await best(async () => {
    const s = await ctx.sessionPersistence.resume('big')
    await ctx.sessionPersistence.close(s)
  })
  console.log(
    `cold load 100k events: read+validate ${load.toFixed(0)} ms, resume (lease, validate; re-read only after a repair) ${resume.toFixed(0)} ms; plain JSON.parse of the lines ${parse.toFixed(0)} ms; ratios ${(load / parse).toFixed(2)}x and ${(resume / parse).toFixed(2)}x`,
  )
  await dispose()
  rmSync(dir, { recursive: true, force: true })
}

// 3. one append + deriveMessages at 100 and at 10,000 events
{
  const ctx = new Context()
  ctx.plugin(SessionService)
  while (!ctx.get('sessions')) await tick()
  const cost = (size) => {
    const samples = []
    for (let rep = 0; rep < 20; rep++) {
      const session = ctx.sessions.create()
      for (let i = 0; i < size; i++) addEvent(session, i)
      session.deriveMessages()
      for (let k = 0; k < 50; k++) {
        const start = now()
        session.append('user/message', { message: { role: 'user', content: text(`more ${k}`) } }, append)
        session.deriveMessages()
        samples.push(now() - start)
      }
      ctx.sessions.close(session)
    }
    samples.sort((a, b) => a - b)
    return samples[Math.floor(samples.length / 2)] * 1000
  }
  cost(100)
  const small = cost(100)
  const large = cost(10_000)
  console.log(
    `append+derive: ${small.toFixed(1)} µs at 100 events, ${large.toFixed(1)} µs at 10,000 events; ratio ${(large / small).toFixed(2)} (near 1 = incremental)`,
  )
}
