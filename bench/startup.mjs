// Start-up of the CLI, each figure beside `node -e 0` measured in the same run: `dsh --help`
// (spawn -> exit) and `dsh run` (spawn -> its first request reaching a local mock model, the
// headless profile with the loop benchmark's echo row) in a fresh DSH_HOME, and again in a home that
// one run already used (a user's every later start: the parse cache filled, decision 391). Medians of
// BENCH_RUNS (default 5) fresh processes. DSH_BIN measures another checkout's bin/dsh.js. Needs
// `npm run build`. The `dsh run` figures are also split into phases from dsh's performance marks
// (bench/preload/startup-marks.mjs): spawn to Node's time origin, Node's bootstrap with the CLI's
// entry modules, the command's modules, composing the config, importing the rows' modules,
// activating them, and the turn up to the request.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { startEchoMock } from './loop/mock.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const bin = process.env.DSH_BIN ?? join(here, '..', 'apps', 'cli', 'bin', 'dsh.js')
const runs = Number(process.env.BENCH_RUNS ?? 5)

const ticksPerSecond = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100
  } catch {
    return 100
  }
})()

/**
 * CPU ms (user + system) a running process has used so far, from /proc (Linux; undefined elsewhere):
 * less disturbed than wall time by other work on a loaded machine.
 */
function cpuOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond
  } catch {
    return undefined
  }
}

/** Spawns node with `args`; resolves with ms from spawn to exit (or to `until(child)` resolving, when given). */
async function time(args, env = process.env, until) {
  const start = performance.now()
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (data) => {
    stderr += data
  })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  const at = until ? await until(child) : undefined
  const code = await exited
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited ${code}: ${stderr.slice(-500)}`)
  return (at ?? performance.now()) - start
}

/** ms to the first request of a fresh home; with `warm`, of the second run in one home. */
async function firstRequest(warm = false) {
  const mock = await startEchoMock(0)
  const dir = mkdtempSync(join(tmpdir(), 'dsh-startup-bench-'))
  mkdirSync(join(dir, 'home'))
  mkdirSync(join(dir, 'work'))
  const marksFile = join(dir, 'marks.json')
  const env = {
    ...process.env,
    DSH_HOME: join(dir, 'home'),
    DEEPSEEK_BASE_URL: mock.url,
    DEEPSEEK_API_KEY: 'sk-mock',
    NODE_OPTIONS: `--import=${pathToFileURL(join(here, 'preload', 'startup-marks.mjs')).href}`,
    DSH_BENCH_MARKS: marksFile,
  }
  for (const key of ['DSH_PROFILE', 'DSH_MODEL']) delete env[key]
  const args = [bin, '--patch', join(here, 'loop', 'echo.yml'), 'run', '--cwd', join(dir, 'work'), 'Run the scenario.']
  try {
    let seen = 0
    let cpu
    let requestAt = 0
    const measure = () =>
      time(args, env, async (child) => {
        await mock.waitForRequests(++seen, 60_000)
        const at = performance.now()
        requestAt = performance.timeOrigin + at
        cpu = cpuOf(child.pid)
        return at
      })
    if (warm) await measure()
    const spawnedAt = performance.timeOrigin + performance.now()
    const ms = await measure()
    return { ms, cpu, phases: existsSync(marksFile) ? phasesOf(marksFile, spawnedAt, requestAt) : undefined }
  } finally {
    await mock.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Phase durations (ms) of one run from its marks: consecutive differences on one clock (epoch ms). */
function phasesOf(file, spawnedAt, requestAt) {
  const { origin, marks } = JSON.parse(readFileSync(file, 'utf8'))
  // The first of each name: a later reconfiguration marks again.
  const at = {}
  for (const [name, time] of marks) at[name] ??= origin + time
  const steps = [
    ['node start', spawnedAt, origin],
    ['node + CLI entry', origin, at['dsh:cli-loaded']],
    ['command modules', at['dsh:cli-loaded'], at['dsh:compose-start']],
    ['compose', at['dsh:compose-start'], at['dsh:composed']],
    ['import rows', at['dsh:composed'], at['dsh:rows-imported']],
    ['activate', at['dsh:rows-imported'], at['dsh:booted']],
    ['turn to request', at['dsh:booted'], requestAt],
  ]
  return Object.fromEntries(steps.map(([name, from, to]) => [name, to - from]))
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const samples = { node: [], help: [], first: [], warm: [], firstCpu: [], warmCpu: [], phases: [] }
for (let run = 0; run < runs; run++) {
  samples.node.push(await time(['-e', '0']))
  samples.help.push(await time([bin, '--help']))
  const first = await firstRequest()
  const warm = await firstRequest(true)
  samples.first.push(first.ms)
  samples.warm.push(warm.ms)
  if (warm.phases) samples.phases.push(warm.phases)
  if (first.cpu !== undefined && warm.cpu !== undefined) {
    samples.firstCpu.push(first.cpu)
    samples.warmCpu.push(warm.cpu)
  }
}
const node = median(samples.node)
const ratio = (key) => `${median(samples[key]).toFixed(0)} ms (${(median(samples[key]) / node).toFixed(2)}x)`
const cpu = (key) => (samples[key].length ? `, cpu ${median(samples[key]).toFixed(0)} ms` : '')
console.log(
  `start-up (median of ${runs}): node -e 0 ${node.toFixed(0)} ms; dsh --help ${ratio('help')}; ` +
    `dsh run spawn -> first model request ${ratio('first')}${cpu('firstCpu')}, in a used home ${ratio('warm')}${cpu('warmCpu')}`,
)
if (samples.phases.length > 0) {
  const names = Object.keys(samples.phases[0])
  const parts = names.map((name) => `${name} ${median(samples.phases.map((phases) => phases[name])).toFixed(0)}`)
  console.log(`start-up phases of dsh run in a used home (median ms of ${samples.phases.length}): ${parts.join(', ')}`)
}
