#!/usr/bin/env node
// Records the demo session (demo/session.jsonl) by running `dsh run` for real on a copy of the sample
// project, with the scripted model playing demo/script.json. `dsh demo` then replays the recording
// through the replay adapter. Run after changing the script or the tools: node apps/cli/scripts/record-demo.mjs
import { spawnSync } from 'node:child_process'
import { copyFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const demo = fileURLToPath(new URL('../demo/', import.meta.url))
const bin = fileURLToPath(new URL('../bin/dsh.js', import.meta.url))
const script = JSON.parse(readFileSync(join(demo, 'script.json'), 'utf8'))
const home = mkdtempSync(join(tmpdir(), 'dsh-record-'))
const project = join(home, 'project')
try {
  cpSync(join(demo, 'sample-project'), project, { recursive: true })
  const patch = join(home, 'scripted.yml')
  writeFileSync(
    patch,
    `- id: llm-scripted\n  use: "@dsh/llm/scripted"\n  config: ${JSON.stringify({ providers: ['scripted'], script: script.responses })}\n`,
  )
  const result = spawnSync(
    process.execPath,
    [
      bin,
      '--patch',
      patch,
      'run',
      '--model',
      'scripted:scripted',
      '--permission-mode',
      'danger-full-access',
      '--cwd',
      project,
      script.task,
    ],
    { env: { PATH: process.env.PATH, DSH_HOME: home }, encoding: 'utf8' },
  )
  process.stderr.write(result.stderr)
  if (result.status !== 0) throw new Error(`recording run exited ${result.status}`)
  const tests = spawnSync(process.execPath, ['test.js'], { cwd: project, encoding: 'utf8' })
  if (tests.status !== 0) throw new Error(`the recorded run did not fix the project:\n${tests.stdout}`)
  const [file] = readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
  copyFileSync(join(home, 'sessions', file), join(demo, 'session.jsonl'))
  process.stdout.write(`recorded ${join(demo, 'session.jsonl')}\n`)
} finally {
  rmSync(home, { recursive: true, force: true })
}
