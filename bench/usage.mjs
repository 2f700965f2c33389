// `/usage` over 1,000 stored sessions (issue 33 goal: under 300 ms). One real session is recorded
// through `dsh run` against a local mock model with prices set, then copied into 1,000 sessions (a new
// id each; the copies' lines are unsealed, which the JSONL store reads unchecked). Timed: `dsh run
// --resume ID /usage` the first time (no meta sidecars yet: every log is read once and its running
// sums written) and warm (the sidecars only), each beside `dsh run --resume ID /help` in the same
// script: the same process start and resume without the store-wide read. Medians of BENCH_RUNS
// (default 5). Needs `npm run build`.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, deepseekUsage, startMockLlmServer } from '@dsh/test-support'

const bin = fileURLToPath(new URL('../apps/cli/bin/dsh.js', import.meta.url))
const runs = Number(process.env.BENCH_RUNS ?? 5)
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const home = mkdtempSync(join(tmpdir(), 'dsh-bench-usage-'))
const project = join(home, 'project')
mkdirSync(project)
const chat = []
const server = await startMockLlmServer({
  respond: (request) =>
    request.path === '/v1/models' ? { type: 'json', status: 200, body: { object: 'list', data: [] } } : chat.shift(),
})
const env = { PATH: process.env.PATH, DSH_HOME: home }

/** Runs dsh; resolves with [exit code, stdout, ms from spawn to exit]. */
function dsh(args) {
  return new Promise((resolve) => {
    const start = performance.now()
    const child = spawn(process.execPath, [bin, ...args], { cwd: project, env })
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
    })
    child.on('exit', (code) => resolve([code, out, performance.now() - start]))
  })
}

for (const [key, value] of [
  ['endpoints.local.baseUrl', `${server.url}/v1`],
  ['endpoints.local.models', '["qwen"]'],
  ['endpoints.local.prices', '{"input":2,"output":8,"cacheRead":0.5}'],
  ['model', 'openai-compatible:local/qwen'],
]) {
  await dsh(['config', 'set', key, value])
}
for (let turn = 0; turn < 5; turn++) {
  chat.push(completionResponse({ text: `answer ${turn}`, usage: deepseekUsage(1000, 200, 400) }))
}
const [code] = await dsh(['run', 'one', 'two', 'three'])
if (code !== 0) throw new Error(`recording the session failed (exit ${code})`)
const sessions = join(home, 'sessions')
const recorded = readdirSync(sessions).find((name) => name.endsWith('.jsonl'))
const lines = readFileSync(join(sessions, recorded), 'utf8').trim().split('\n')
const resumeId = recorded.replace(/\.jsonl$/, '')

function copies() {
  for (const name of readdirSync(sessions)) if (name.endsWith('.meta.json')) unlinkSync(join(sessions, name))
  for (let index = 0; index < 999; index++) {
    const id = `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`
    const out = lines.map((line, at) => {
      const { crc: _crc, hash: _hash, ...value } = JSON.parse(line)
      return JSON.stringify(at === 0 ? { ...value, id } : value)
    })
    writeFileSync(join(sessions, `${id}.jsonl`), `${out.join('\n')}\n`)
  }
}

const cold = []
const warm = []
const baseline = []
for (let run = 0; run < runs; run++) {
  copies()
  const [coldCode, coldOut, coldMs] = await dsh(['run', '--resume', resumeId, '/usage'])
  if (coldCode !== 0 || !/today: \$/.test(coldOut)) throw new Error(`/usage failed: ${coldOut}`)
  cold.push(coldMs)
  warm.push((await dsh(['run', '--resume', resumeId, '/usage']))[2])
  baseline.push((await dsh(['run', '--resume', resumeId, '/help']))[2])
}
const [, shown] = await dsh(['run', '--resume', resumeId, '/usage'])
await server.close()
rmSync(home, { recursive: true, force: true })

const base = median(baseline)
const row = (name, values) =>
  `${name.padEnd(34)} ${median(values).toFixed(0).padStart(6)} ms  (/usage itself: ${(median(values) - base).toFixed(0)} ms)`
console.log(`/usage over 1,000 sessions (JSONL store), medians of ${runs}`)
console.log(`${'dsh run --resume ID /help (baseline)'.padEnd(34)} ${base.toFixed(0).padStart(6)} ms`)
console.log(row('/usage, first time (no sidecars)', cold))
console.log(row('/usage, warm', warm))
console.log(`first line: ${shown.split('\n')[0]}`)
