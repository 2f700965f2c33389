// The first edit's added latency from language servers: `dsh run` in a small TypeScript project, the
// model (a local mock) reads a file, thinks ~2 s, edits it; the edit's time (tool call to tool result,
// from the durable log) with the language servers off, as before this change (started on the first
// edit, its diagnostics awaited), and as now (started when the session opens, a cold server awaited at
// most coldWaitMs). Medians of BENCH_RUNS (default 3) runs, all in this one script. Needs `npm run build`.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'

const here = dirname(fileURLToPath(import.meta.url))
const bin = process.env.DSH_BIN ?? join(here, '..', 'apps', 'cli', 'bin', 'dsh.js')
const runs = Number(process.env.BENCH_RUNS ?? 3)

const CONFIGS = {
  'servers off': '- id: lsp\n  disabled: true\n- id: lsp-tools\n  disabled: true\n',
  'before (start on first edit, wait for it)':
    '- id: lsp\n  use: "@dsh/lsp/stdio"\n  config: { warm: false, coldWaitMs: 20000 }\n',
  'now (start at session open, bounded wait)': '- id: lsp\n  use: "@dsh/lsp/stdio"\n  config: {}\n',
}

const call = (id, name, args) => ({ id, name, arguments: JSON.stringify(args) })

async function once(patchText) {
  const root = mkdtempSync(join(tmpdir(), 'dsh-bench-lsp-'))
  const home = join(root, 'home')
  const ws = join(root, 'ws')
  mkdirSync(home)
  mkdirSync(join(ws, 'src'), { recursive: true })
  writeFileSync(join(ws, 'tsconfig.json'), '{ "compilerOptions": { "strict": true }, "include": ["src"] }\n')
  writeFileSync(join(ws, 'package.json'), '{ "name": "bench-ws", "private": true }\n')
  writeFileSync(join(ws, 'src/main.ts'), 'export const total: number = 1 + 2\n')
  writeFileSync(join(home, 'patch.yml'), patchText)
  const model = await startMockLlmServer()
  model.enqueue(
    completionResponse({ toolCalls: [call('r1', 'read', { path: 'src/main.ts' })] }),
    // The mock's delay applies per streamed chunk: about 2 s of "thinking" in all.
    completionResponse({
      toolCalls: [call('e1', 'edit', { path: 'src/main.ts', old_string: '1 + 2', new_string: '2 + 3' })],
      delayMs: 500,
    }),
    completionResponse({ text: 'done' }),
  )
  try {
    // Asynchronous: the mock model answers from this very process.
    const child = spawn(process.execPath, [bin, 'run', 'edit it'], {
      cwd: ws,
      env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-bench', DEEPSEEK_BASE_URL: model.url },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (data) => {
      stderr += data
    })
    const code = await new Promise((done) => child.on('exit', done))
    if (code !== 0) throw new Error(`dsh run exited ${code}: ${stderr.slice(-400)}`)
    const dir = join(home, 'sessions')
    const file = readdirSync(dir).find((name) => name.endsWith('.jsonl'))
    const events = readFileSync(join(dir, file), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => JSON.parse(line))
    const at = (type, id) =>
      events.find((e) => e.type === type && (e.data.call?.id ?? e.data.message?.toolCallId) === id)?.time
    return at('tool/result', 'e1') - at('tool/call', 'e1')
  } finally {
    await model.close()
    rmSync(root, { recursive: true, force: true })
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const results = {}
for (const [name, patch] of Object.entries(CONFIGS)) {
  const times = []
  for (let i = 0; i < runs; i++) times.push(await once(patch))
  results[name] = median(times)
}
const off = results['servers off']
for (const [name, ms] of Object.entries(results)) {
  console.log(
    `${name.padEnd(44)} first edit ${String(Math.round(ms)).padStart(6)} ms   added ${String(Math.round(ms - off)).padStart(6)} ms`,
  )
}
