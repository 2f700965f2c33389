// `dsh check --watch-config` as a real process: edits of a --patch file reconfigure the running tree,
// a bad edit is rejected with the reason, and SIGINT ends it with exit code 130.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../bin/dsh.js', import.meta.url))
let home: string
let child: ChildProcess | undefined

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-watch-cli-'))
})
afterEach(() => {
  child?.kill('SIGKILL')
  rmSync(home, { recursive: true, force: true })
})

it('reconfigures on a good edit, keeps the tree on a bad edit, exits 130 on SIGINT', async () => {
  const patch = join(home, 'live.yml')
  writeFileSync(patch, '')
  const proc = spawn(process.execPath, [bin, '--patch', patch, 'check', '--watch-config'], {
    cwd: home,
    env: { PATH: process.env.PATH, DSH_HOME: home },
  })
  child = proc
  let stderr = ''
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const started = Date.now()
      const timer = setInterval(() => {
        if (pattern.test(stderr)) {
          clearInterval(timer)
          resolve()
        } else if (Date.now() - started > 10_000) {
          clearInterval(timer)
          reject(new Error(`timed out waiting for ${pattern}; stderr so far:\n${stderr}`))
        }
      }, 20)
    })

  await waitFor(/dsh: watching .*live\.yml/)
  writeFileSync(patch, '- id: invariants\n  config: { note: edited }\n')
  await waitFor(/dsh: reconfigured: \+\[invariants\] -\[invariants\]/)
  writeFileSync(patch, '- id: invariants\n  config: [broken\n')
  await waitFor(/dsh: config change rejected: .*invalid YAML[\s\S]*keeping the last good configuration/)

  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  proc.kill('SIGINT')
  expect(await exit).toBe(130)
})
