// The terminal chat in a pseudo-terminal (node-pty + @xterm/headless), fresh DSH_HOME, the mock model:
// (1) plain `dsh` from spawn to first paint (the editor, typing possible) and to the chat being ready
//     (the session's footer drawn), beside `node -e 0`;
// (2) Esc to "turn stopped" on the screen while a 2,000-line answer streams;
// (3) the chat process's CPU for rendering that answer (its user+system time, from /proc on Linux);
// (4) a resumed 2,000-message session (1,000 questions and answers written through the JSONL store):
//     each frame's render time while a 200-line answer streams into it (DSH_TUI_FRAMES, screen.ts), the
//     first full paint of the transcript, and the process's RSS after the answer beside a fresh chat's.
// Medians of BENCH_RUNS (default 5). Pi's CLI is compared only when PI_BIN names its entry script.
import { spawn as spawnChild } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import JsonlSessionStore from '@dsh/session/store/jsonl'
import { completionSteps, startMockLlmServer } from '@dsh/test-support'
import pty from '@lydell/node-pty'
import xterm from '@xterm/headless'
import { bootSessions } from './lib/sessions.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const bin = process.env.DSH_BIN ?? join(here, '..', 'apps', 'cli', 'bin', 'dsh.js')
const runs = Number(process.env.BENCH_RUNS ?? 5)
// BENCH_ONLY=start or transcript runs one part; BENCH_TUI_FRAMES_PRINT=1 prints every frame; BENCH_TUI_NODE_ARGS (space-separated, e.g. --cpu-prof) go to the transcript part's chat process.
const only = process.env.BENCH_ONLY
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** Spawns `args` in a 100x30 pty; `until(text)` is polled against the rendered screen. */
function open(args, env) {
  const term = new xterm.Terminal({ cols: 100, rows: 30, allowProposedApi: true })
  const child = pty.spawn(process.execPath, args, { cols: 100, rows: 30, cwd: env.WORK ?? process.cwd(), env })
  let pending = Promise.resolve()
  child.onData((data) => {
    pending = pending.then(() => new Promise((done) => term.write(data, done)))
  })
  const exited = new Promise((resolve) => child.onExit(resolve))
  const screen = () => {
    const lines = []
    for (let y = 0; y < term.buffer.active.length; y++)
      lines.push(term.buffer.active.getLine(y)?.translateToString(true))
    return lines.join('\n')
  }
  const waitFor = async (pattern, ms = 60_000) => {
    const deadline = performance.now() + ms
    while (performance.now() < deadline) {
      await pending
      if (pattern.test(screen())) return performance.now()
      await new Promise((done) => setTimeout(done, 5))
    }
    throw new Error(`timed out waiting for ${pattern}:\n${screen().slice(-1500)}`)
  }
  return { child, waitFor, exited }
}

function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 // utime + stime, in clock ticks of 10 ms
  } catch {
    return Number.NaN
  }
}

async function nodeBaseline() {
  const start = performance.now()
  await new Promise((resolve) => spawnChild(process.execPath, ['-e', '0']).on('exit', resolve))
  return performance.now() - start
}

const lines = Array.from({ length: 2000 }, (_, i) =>
  i % 100 === 0 ? `## Part ${i / 100}` : `- line ${i} of the answer`,
)
const pieces = []
for (let i = 0; i < lines.length; i += 10) pieces.push(`${lines.slice(i, i + 10).join('\n')}\n`)

/** The chat's environment: a fresh home and workspace in `dir`, the mock model. */
function chatEnv(dir, server) {
  return {
    PATH: process.env.PATH,
    HOME: dir,
    TERM: 'xterm-256color',
    DSH_HOME: dir,
    WORK: join(dir, 'work'),
    DEEPSEEK_API_KEY: 'sk-bench',
    DEEPSEEK_BASE_URL: server.url,
  }
}

async function oneRun() {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-tui-bench-'))
  mkdirSync(join(dir, 'work'))
  const server = await startMockLlmServer()
  // The whole answer, then a stream that never ends (only Esc stops it).
  server.enqueue({ type: 'sse', steps: completionSteps({ text: pieces, delayMs: 1 }) })
  server.enqueue({ type: 'sse', steps: [...completionSteps({ text: ['Still '] }).slice(0, 2), { hang: true }] })
  const env = chatEnv(dir, server)
  try {
    const start = performance.now()
    const chat = open([bin], env)
    const paint = (await chat.waitFor(/starting dsh…/)) - start
    const ready = (await chat.waitFor(/(^| · )session [0-9a-f-]{36}/m)) - start
    const before = cpuMs(chat.child.pid)
    chat.child.write('write a lot\r')
    await chat.waitFor(/line 1999 of the answer/)
    const render = cpuMs(chat.child.pid) - before
    chat.child.write('again\r')
    await chat.waitFor(/Still/)
    const esc = performance.now()
    chat.child.write('\x1b')
    const cancelled = (await chat.waitFor(/turn stopped/)) - esc
    chat.child.write('\x04')
    await chat.exited
    return { paint, ready, cancelled, render }
  } finally {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function piReady() {
  if (!process.env.PI_BIN) return undefined
  const start = performance.now()
  const pi = open([process.env.PI_BIN], { ...process.env })
  const at = await pi.waitFor(/\S/)
  pi.child.kill()
  return at - start
}

if (!only || only === 'start') {
  const samples = { node: [], paint: [], ready: [], cancelled: [], render: [], pi: [] }
  for (let run = 0; run < runs; run++) {
    samples.node.push(await nodeBaseline())
    const result = await oneRun()
    samples.paint.push(result.paint)
    samples.ready.push(result.ready)
    samples.cancelled.push(result.cancelled)
    samples.render.push(result.render)
    const pi = await piReady()
    if (pi !== undefined) samples.pi.push(pi)
  }
  const node = median(samples.node)
  const ready = median(samples.ready)
  const paint = median(samples.paint)
  console.log(
    `tui (median of ${runs}): node -e 0 ${node.toFixed(0)} ms; dsh spawn -> first paint ${paint.toFixed(0)} ms ` +
      `(${(paint / node).toFixed(2)}x), -> chat ready ${ready.toFixed(0)} ms (${(ready / node).toFixed(2)}x)` +
      (samples.pi.length
        ? `; pi spawn -> first paint ${median(samples.pi).toFixed(0)} ms`
        : '; pi: PI_BIN not set, not compared'),
  )
  console.log(
    `tui: Esc -> "turn stopped" on screen ${median(samples.cancelled).toFixed(0)} ms; ` +
      `CPU to render a 2,000-line answer ${median(samples.render).toFixed(0)} ms`,
  )
}

// (4) a long transcript
const text = (t) => [{ type: 'text', text: t }]

/** Writes a session of `messages` alternating questions and Markdown answers into `home`'s sessions. */
async function longSession(home, cwd, messages) {
  const { ctx, dispose } = await bootSessions(JsonlSessionStore, join(home, 'sessions'))
  const session = ctx.sessions.create({ cwd })
  const append = { surfaceOp: { op: 'append' } }
  for (let i = 0; i < messages / 2; i++) {
    session.append(
      'user/message',
      { message: { role: 'user', content: text(`question ${i}: why is line ${i} slow?`) } },
      append,
    )
    const answer = `Answer ${i}: **because** of \`thing ${i}\`.\n\n- first reason ${i}\n- second reason ${i}\n\nDone.`
    session.append(
      'assistant/message',
      { message: { role: 'assistant', content: text(answer), finishReason: 'stop' } },
      append,
    )
  }
  await ctx.sessions.flush(session)
  await ctx.sessionPersistence.close(session)
  const id = session.id
  await dispose()
  return id
}

function rssMb(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match ? Number(match[1]) / 1024 : Number.NaN
}

const streamed = Array.from({ length: 200 }, (_, i) => `- streamed line ${i} with \`code\` and **bold**`)
const streamPieces = []
for (let i = 0; i < streamed.length; i += 4) streamPieces.push(`${streamed.slice(i, i + 4).join('\n')}\n`)

/** One chat (fresh, or resuming `resume`): frames while the answer streams, the first frame, RSS after. */
async function transcriptRun(resume) {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-tui-long-'))
  mkdirSync(join(dir, 'work'))
  const framesFile = join(dir, 'frames.txt')
  const server = await startMockLlmServer()
  server.enqueue({ type: 'sse', steps: completionSteps({ text: streamPieces, delayMs: 2 }) })
  const env = { ...chatEnv(dir, server), DSH_TUI_FRAMES: framesFile }
  try {
    const id = resume ? await longSession(dir, join(dir, 'work'), resume) : undefined
    const nodeArgs = process.env.BENCH_TUI_NODE_ARGS?.split(' ').filter(Boolean) ?? []
    const chat = open([...nodeArgs, bin, ...(id ? ['--resume', id] : [])], env)
    await chat.waitFor(/(^| · )session [0-9a-f-]{36}/m)
    await new Promise((done) => setTimeout(done, 300))
    const readyRss = rssMb(chat.child.pid)
    const sent = Date.now()
    chat.child.write('stream please\r')
    await chat.waitFor(/streamed line 199/)
    await new Promise((done) => setTimeout(done, 300))
    const rss = rssMb(chat.child.pid)
    chat.child.write('\x04')
    await chat.exited
    const frames = readFileSync(framesFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' ').map(Number))
    const during = frames.filter(([at]) => at >= sent).map(([, ms]) => ms)
    const before = frames.filter(([at]) => at < sent).map(([, ms]) => ms)
    if (process.env.BENCH_TUI_FRAMES_PRINT)
      console.error(resume ? 'resumed' : 'fresh', during.map((ms) => ms.toFixed(1)).join(' '))
    return { during, firstPaint: Math.max(...before), readyRss, rss }
  } finally {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const pct = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]
const long = { max: [], p50: [], p99: [], count: [], first: [], rss: [], readyRss: [], freshRss: [], freshMax: [] }
for (let run = 0; run < (!only || only === 'transcript' ? runs : 0); run++) {
  const fresh = await transcriptRun(undefined)
  const resumed = await transcriptRun(2000)
  long.freshRss.push(fresh.rss)
  long.freshMax.push(Math.max(...fresh.during))
  long.max.push(Math.max(...resumed.during))
  long.p50.push(pct(resumed.during, 0.5))
  long.p99.push(pct(resumed.during, 0.99))
  long.count.push(resumed.during.length)
  long.first.push(resumed.firstPaint)
  long.rss.push(resumed.rss)
  long.readyRss.push(resumed.readyRss)
}
if (long.max.length > 0) {
  console.log(
    `tui, 2,000-message transcript (median of ${runs}): while a 200-line answer streams, ${median(long.count)} frames, ` +
      `median ${median(long.p50).toFixed(1)} ms, slowest ${median(long.max).toFixed(1)} ms, p99 ${median(long.p99).toFixed(1)} ms (a fresh chat's slowest ` +
      `${median(long.freshMax).toFixed(1)} ms); first paint of the resumed transcript ${median(long.first).toFixed(0)} ms`,
  )
  console.log(
    `tui: RSS after the answer ${median(long.rss).toFixed(0)} MB with 2,000 messages (at ready ` +
      `${median(long.readyRss).toFixed(0)} MB), ${median(long.freshRss).toFixed(0)} MB fresh: ` +
      `${(median(long.rss) / median(long.freshRss)).toFixed(2)}x`,
  )
}
