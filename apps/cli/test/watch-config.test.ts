// `dsh check --watch-config` as a real process: edits of a --patch file reconfigure the running tree,
// a bad edit is rejected with the reason, and SIGINT ends it with exit code 130.
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { spawnDsh } from './dsh-child.js'

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
  const proc = spawnDsh(['--patch', patch, 'check', '--watch-config'], { home })
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

it('dsh rpc --watch-config: a new row activates live, a bad edit is a config/changed notification and the old tree stays', async () => {
  const patch = join(home, 'live.yml')
  writeFileSync(patch, '')
  const proc = spawnDsh(['--watch-config', '--patch', patch, 'rpc'], { home, modelUrl: 'http://127.0.0.1:9' })
  child = proc
  const messages: Array<Record<string, unknown>> = []
  let buffer = ''
  let stderr = ''
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk
    const lines = buffer.split('\n')
    buffer = lines.pop() ?? ''
    for (const line of lines) if (line.trim()) messages.push(JSON.parse(line))
  })
  const until = <T>(find: () => T | undefined, what: string) =>
    new Promise<T>((resolve, reject) => {
      const started = Date.now()
      const timer = setInterval(() => {
        const found = find()
        if (found !== undefined) {
          clearInterval(timer)
          resolve(found)
        } else if (Date.now() - started > 20_000) {
          clearInterval(timer)
          reject(new Error(`timed out waiting for ${what}; stderr:\n${stderr}`))
        }
      }, 20)
    })
  let nextId = 0
  const call = async (method: string, params: Record<string, unknown>) => {
    const id = ++nextId
    proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
    return until(() => messages.find((message) => message.id === id), `the answer to ${method}`)
  }
  const configChanged = (count: number) =>
    until(() => {
      const seen = messages.filter((message) => message.method === 'config/changed')
      return seen.length >= count ? (seen[count - 1]?.params as Record<string, unknown>) : undefined
    }, `config/changed #${count}`)

  await call('initialize', {})
  const created = (await call('session/create', {})).result as { sessionId: string }
  const greet = () => call('command/run', { sessionId: created.sessionId, line: '/greet' })
  expect((await greet()).result).toMatchObject({ ok: false, code: 'COMMAND_UNKNOWN' })
  await until(() => (/dsh: watching .*live\.yml/.test(stderr) ? true : undefined), 'the watcher')

  const fixture = fileURLToPath(new URL('./fixtures/greet-command.mjs', import.meta.url))
  writeFileSync(patch, `- id: greet\n  use: ${JSON.stringify(fixture)}\n  config: { text: hi from the patch }\n`)
  expect(await configChanged(1)).toEqual({ ok: true, added: ['greet'], removed: [] })
  expect((await greet()).result).toMatchObject({ ok: true, name: 'greet', text: 'hi from the patch' })

  writeFileSync(patch, '- id: greet\n  config: [broken\n')
  const refused = await configChanged(2)
  expect(refused).toMatchObject({ ok: false })
  expect(refused.error).toMatch(/invalid YAML[\s\S]*keeping the last good configuration/)
  expect((await greet()).result).toMatchObject({ ok: true, text: 'hi from the patch' })
  expect(stderr).toMatch(/dsh: config change rejected/)

  await call('shutdown', {})
  proc.stdin.end()
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  expect(await exit).toBe(0)
})
