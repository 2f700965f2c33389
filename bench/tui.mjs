// The terminal chat in a pseudo-terminal (node-pty + @xterm/headless), fresh DSH_HOME, the mock model:
// (1) plain `dsh` from spawn to first paint (the editor, typing possible) and to the chat being ready
//     (the session's footer drawn), beside `node -e 0`;
// (2) Esc to "turn ended aborted" on the screen while a 2,000-line answer streams;
// (3) the chat process's CPU for rendering that answer (its user+system time, from /proc on Linux).
// Medians of BENCH_RUNS (default 5). Pi's CLI is compared only when PI_BIN names its entry script.
import { spawn as spawnChild } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionSteps, startMockLlmServer } from '@dsh/test-support'
import pty from '@lydell/node-pty'
import xterm from '@xterm/headless'

const here = dirname(fileURLToPath(import.meta.url))
const bin = process.env.DSH_BIN ?? join(here, '..', 'apps', 'cli', 'bin', 'dsh.js')
const runs = Number(process.env.BENCH_RUNS ?? 5)
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

async function oneRun() {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-tui-bench-'))
  mkdirSync(join(dir, 'work'))
  const server = await startMockLlmServer()
  // The whole answer, then a stream that never ends (only Esc stops it).
  server.enqueue({ type: 'sse', steps: completionSteps({ text: pieces, delayMs: 1 }) })
  server.enqueue({ type: 'sse', steps: [...completionSteps({ text: ['Still '] }).slice(0, 2), { hang: true }] })
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    TERM: 'xterm-256color',
    DSH_HOME: dir,
    WORK: join(dir, 'work'),
    DEEPSEEK_API_KEY: 'sk-bench',
    DEEPSEEK_BASE_URL: server.url,
  }
  try {
    const start = performance.now()
    const chat = open([bin], env)
    const paint = (await chat.waitFor(/starting dsh…/)) - start
    const ready = (await chat.waitFor(/ · session [0-9a-f-]{36}/)) - start
    const before = cpuMs(chat.child.pid)
    chat.child.write('write a lot\r')
    await chat.waitFor(/line 1999 of the answer/)
    const render = cpuMs(chat.child.pid) - before
    chat.child.write('again\r')
    await chat.waitFor(/Still/)
    const esc = performance.now()
    chat.child.write('\x1b')
    const cancelled = (await chat.waitFor(/turn ended aborted/)) - esc
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
  `tui: Esc -> "turn ended aborted" on screen ${median(samples.cancelled).toFixed(0)} ms; ` +
    `CPU to render a 2,000-line answer ${median(samples.render).toFixed(0)} ms`,
)
