// One measured run of the real loop in this process: the CLI's own compose() of the headless profile
// plus echo.yml, boot, then `ctx.headless.run()` (what `dsh run` does minus argv and the process),
// with the DeepSeek adapter pointed at MOCK_BASE_URL and a fresh DSH_HOME: sessions are logged durably.
// Prints one JSON line: wall and CPU of the run, boot, the session log's bytes.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const steps = Number(process.env.STEPS)
const tmp = mkdtempSync(join(tmpdir(), 'dsh-loop-bench-'))
const home = join(tmp, 'home')
const cwd = join(tmp, 'work')
mkdirSync(home)
mkdirSync(cwd)
Object.assign(process.env, {
  DSH_HOME: home,
  DEEPSEEK_BASE_URL: process.env.MOCK_BASE_URL,
  DEEPSEEK_API_KEY: 'sk-mock',
})
for (const key of ['DSH_PROFILE', 'DSH_MODEL', 'DSH_SESSIONS_DIR']) delete process.env[key]

const t0 = performance.now()
const { boot } = await import('@dsh/composition')
const { compose } = await import('../../apps/cli/dist/config.js')
const composition = compose({ options: { patch: [join(here, 'echo.yml')] }, command: 'run', args: [], cwd })
const runtime = await boot(composition.tree, {
  onLog: (record) => {
    if (record.level === 'error') process.stderr.write(`dsh: [${record.name}] ${record.text}\n`)
  },
})
const booted = performance.now()
const cpu0 = process.cpuUsage()
const start = performance.now()
const result = await runtime.root.get('headless').run({
  task: 'Run the scenario.',
  cwd,
  model: {},
  yes: false,
  permissionMode: 'workspace-write',
  maxSteps: steps + 5,
})
const wall = performance.now() - start
const cpu = process.cpuUsage(cpu0)
if (result.reason !== 'completed') throw new Error(`the run ended ${result.reason}: ${result.message ?? ''}`)
let bytes = 0
for (const name of readdirSync(join(home, 'sessions'))) {
  if (name.endsWith('.jsonl')) bytes += statSync(join(home, 'sessions', name)).size
}
console.log(
  JSON.stringify({
    steps: globalThis.__dshLoopBenchEchoes ?? 0,
    wallMs: wall,
    cpuMs: (cpu.user + cpu.system) / 1000,
    bootMs: booted - t0,
    logBytes: bytes,
  }),
)
await runtime.dispose()
rmSync(tmp, { recursive: true, force: true })
