// Per-step cost of the real agent loop, in-process against a local mock model (bench/loop/): each run
// is a fresh process doing N `echo` tool rounds then "done", with the durable JSONL session log on.
// The baseline is a hand-written fetch + SSE loop against the same mock (bench/loop/raw.mjs), run
// interleaved with dsh so machine drift hits both. Prints medians, the dsh/raw ratios and the
// runtime's own cost per step. Needs `npm run build`.
//   BENCH_STEPS=100,500 BENCH_RUNS=3 node bench/loop.mjs
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEchoMock } from './loop/mock.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const stepsList = (process.env.BENCH_STEPS ?? '100,500').split(',').map(Number)
const runs = Number(process.env.BENCH_RUNS ?? 3)
const drivers = { raw: join(here, 'loop', 'raw.mjs'), dsh: join(here, 'loop', 'dsh.mjs') }

async function once(driver, steps) {
  const mock = await startEchoMock(steps)
  try {
    const child = spawn(process.execPath, [drivers[driver]], {
      env: { ...process.env, MOCK_BASE_URL: mock.url, STEPS: String(steps) },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.on('data', (data) => {
      out += data
    })
    const code = await new Promise((resolve) => child.on('exit', resolve))
    const line = out.trim().split('\n').at(-1)
    if (code !== 0 || !line) throw new Error(`${driver} at ${steps} steps exited ${code}`)
    const result = JSON.parse(line)
    if (result.steps !== steps) throw new Error(`${driver} ran ${result.steps} echo steps, expected ${steps}`)
    if (mock.requests.length !== steps + 1) throw new Error(`${driver} sent ${mock.requests.length} requests`)
    return result
  } finally {
    await mock.close()
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

for (const steps of stepsList) {
  const samples = { raw: [], dsh: [] }
  for (let run = 0; run < runs; run++) {
    // Alternate which goes first, so a trend on the machine does not favour one.
    const order = run % 2 === 0 ? ['raw', 'dsh'] : ['dsh', 'raw']
    for (const driver of order) samples[driver].push(await once(driver, steps))
  }
  const pick = (driver, key) => median(samples[driver].map((sample) => sample[key]))
  const raw = { wall: pick('raw', 'wallMs'), cpu: pick('raw', 'cpuMs') }
  const dsh = { wall: pick('dsh', 'wallMs'), cpu: pick('dsh', 'cpuMs'), bytes: pick('dsh', 'logBytes') }
  console.log(
    `loop ${steps} steps (median of ${runs}): dsh wall ${dsh.wall.toFixed(0)} ms, cpu ${dsh.cpu.toFixed(0)} ms; ` +
      `raw fetch+SSE wall ${raw.wall.toFixed(0)} ms, cpu ${raw.cpu.toFixed(0)} ms; ` +
      `ratios wall ${(dsh.wall / raw.wall).toFixed(2)}x, cpu ${(dsh.cpu / raw.cpu).toFixed(2)}x; ` +
      `dsh's own cost ${((dsh.wall - raw.wall) / steps).toFixed(2)} ms wall, ${((dsh.cpu - raw.cpu) / steps).toFixed(2)} ms cpu per step; ` +
      `session log ${(dsh.bytes / steps / 1024).toFixed(2)} KB per step; boot ${pick('dsh', 'bootMs').toFixed(0)} ms`,
  )
}
