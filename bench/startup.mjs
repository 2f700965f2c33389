// Start-up of the CLI, each figure beside `node -e 0` measured in the same run: `dsh --help`
// (spawn -> exit) and `dsh run` (spawn -> its first request reaching a local mock model, the
// headless profile with the loop benchmark's echo row, a fresh DSH_HOME). Medians of BENCH_RUNS
// (default 5) fresh processes. DSH_BIN measures another checkout's bin/dsh.js. Needs `npm run build`.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEchoMock } from './loop/mock.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const bin = process.env.DSH_BIN ?? join(here, '..', 'apps', 'cli', 'bin', 'dsh.js')
const runs = Number(process.env.BENCH_RUNS ?? 5)

/** Spawns node with `args`; resolves with ms from spawn to exit (or to `until()` resolving, when given). */
async function time(args, env = process.env, until) {
  const start = performance.now()
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (data) => {
    stderr += data
  })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  const at = until ? await until() : undefined
  const code = await exited
  if (code !== 0) throw new Error(`node ${args.join(' ')} exited ${code}: ${stderr.slice(-500)}`)
  return (at ?? performance.now()) - start
}

async function firstRequest() {
  const mock = await startEchoMock(0)
  const dir = mkdtempSync(join(tmpdir(), 'dsh-startup-bench-'))
  mkdirSync(join(dir, 'home'))
  mkdirSync(join(dir, 'work'))
  const env = { ...process.env, DSH_HOME: join(dir, 'home'), DEEPSEEK_BASE_URL: mock.url, DEEPSEEK_API_KEY: 'sk-mock' }
  for (const key of ['DSH_PROFILE', 'DSH_MODEL']) delete env[key]
  const args = [bin, '--patch', join(here, 'loop', 'echo.yml'), 'run', '--cwd', join(dir, 'work'), 'Run the scenario.']
  try {
    return await time(args, env, async () => {
      await mock.waitForRequests(1, 60_000)
      return performance.now()
    })
  } finally {
    await mock.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const samples = { node: [], help: [], first: [] }
for (let run = 0; run < runs; run++) {
  samples.node.push(await time(['-e', '0']))
  samples.help.push(await time([bin, '--help']))
  samples.first.push(await firstRequest())
}
const node = median(samples.node)
const help = median(samples.help)
const first = median(samples.first)
console.log(
  `start-up (median of ${runs}): node -e 0 ${node.toFixed(0)} ms; dsh --help ${help.toFixed(0)} ms (${(help / node).toFixed(2)}x); ` +
    `dsh run spawn -> first model request ${first.toFixed(0)} ms (${(first / node).toFixed(2)}x)`,
)
