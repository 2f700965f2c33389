// The store over a session's life in the product (the built CLI, the mock model server): a crash
// between blob and event never leaves a dangling ref, `dsh sessions rm` removes exactly the blobs no
// other session uses (counted on disk), and a bundle export/import carries the blobs along.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { refsIn } from '@dsh/attachments'
import { completionResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { bin, blobFiles, dsh, sessionEvents } from './cli.js'
import { png } from './images.js'

const stalled = fileURLToPath(new URL('./fixtures/stalled-attachments.mjs', import.meta.url))
const hexOf = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-blob-life-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

/** Backdates every blob so the sweep's grace period (for writers still running) is over. */
function ageBlobs(): void {
  const old = new Date(Date.now() - 10 * 60_000)
  for (const name of blobFiles(home)) utimesSync(join(home, 'blobs', 'sha256', name.slice(0, 2), name), old, old)
}

it('a process killed between blob and event leaves no dangling ref; resume goes on', async () => {
  const shot = await png(16, 16, '#aa0000')
  writeFileSync(join(home, 'shot.png'), shot)
  await using server = await startMockLlmServer({ respond: () => completionResponse({ text: 'ok' }) })
  const url = server.url
  const first = await dsh(['run', '--output', 'json', 'hello'], { cwd: home, home, url })
  expect(first.code).toBe(0)
  const id = (JSON.parse(first.stdout) as { sessionId: string }).sessionId

  for (const stall of ['before', 'after'] as const) {
    const marker = join(home, `${stall}.marker`)
    const patch = join(home, `${stall}.yml`)
    writeFileSync(
      patch,
      `- id: attachments\n  use: ${JSON.stringify(stalled)}\n  config: { stall: ${stall}, marker: ${JSON.stringify(marker)} }\n`,
    )
    const child = spawn(
      process.execPath,
      [bin, '--patch', patch, 'run', '--resume', id, '--attach', 'shot.png', 'look'],
      {
        cwd: home,
        env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: url },
        stdio: 'ignore',
      },
    )
    const exited = new Promise((done) => child.on('exit', done))
    for (let waited = 0; !existsSync(marker) && waited < 30_000; waited += 25) await sleep(25)
    expect(existsSync(marker)).toBe(true)
    await sleep(300) // longer than the write-behind delay: anything logged by now is on disk
    child.kill('SIGKILL')
    await exited
    const logged = refsIn(sessionEvents(home, id))
    for (const ref of logged) expect(blobFiles(home)).toContain(ref.slice(7))
    if (stall === 'after') expect(readFileSync(marker, 'utf8')).toBe(`sha256:${hexOf(shot)}`)
  }
  // The blob of the killed attach is on disk, unreferenced: a sweep's business, not a broken log.
  expect(blobFiles(home)).toEqual([hexOf(shot)])
  expect(refsIn(sessionEvents(home, id)).size).toBe(0)

  const before = server.requests.length
  const again = await dsh(['run', '--resume', id, 'and now?'], { cwd: home, home, url })
  expect(again.stderr).toBe('')
  expect(again.code).toBe(0)
  const body = JSON.stringify((server.requests[before] as RecordedRequest).body)
  expect(body).toContain('and now?')
  expect(body).not.toContain('image_url')
})

it('dsh sessions rm removes the blobs no other session uses; a bundle brings them back', async () => {
  const [a, b] = [await png(8, 8, '#111111'), await png(8, 8, '#222222')]
  writeFileSync(join(home, 'a.png'), a)
  writeFileSync(join(home, 'b.png'), b)
  await using server = await startMockLlmServer({ respond: () => completionResponse({ text: 'seen' }) })
  const url = server.url
  const run = async (...args: string[]) => {
    const ran = await dsh(['run', '--output', 'json', '--model', 'deepseek-flash', ...args], { cwd: home, home, url })
    expect(ran.code).toBe(0)
    return (JSON.parse(ran.stdout) as { sessionId: string }).sessionId
  }
  const first = await run('--attach', 'a.png', '--attach', 'b.png', 'two images')
  const second = await run('--attach', 'b.png', 'one image')
  expect(blobFiles(home).sort()).toEqual([hexOf(a), hexOf(b)].sort())

  // Freshly written blobs are spared (a running dsh may be about to reference one).
  const young = await dsh(['sessions', 'rm', first], { cwd: home, home, url })
  expect(young.code).toBe(0)
  expect(young.stderr).toContain('kept 1 written in the last minute')
  expect(blobFiles(home)).toHaveLength(2)

  const third = await run('--attach', 'a.png', 'again')
  ageBlobs()
  const bundle = await dsh(['sessions', 'export', second, '--format', 'bundle'], { cwd: home, home, url })
  expect(bundle.code).toBe(0)
  writeFileSync(join(home, 'second.bundle'), bundle.stdout)

  const removed = await dsh(['sessions', 'rm', second], { cwd: home, home, url })
  expect(removed.code).toBe(0)
  expect(blobFiles(home)).toEqual([hexOf(a)]) // b was used by `second` only; a by `third`
  expect(existsSync(join(home, 'sessions', `${second}.jsonl`))).toBe(false)
  ageBlobs()
  expect((await dsh(['sessions', 'rm', third], { cwd: home, home, url })).code).toBe(0)
  expect(blobFiles(home)).toEqual([])

  const imported = await dsh(['sessions', 'import', join(home, 'second.bundle')], { cwd: home, home, url })
  expect(imported.stderr).toContain('1 attachment blob')
  expect(imported.code).toBe(0)
  expect(blobFiles(home)).toEqual([hexOf(b)])
  expect([...refsIn(sessionEvents(home, second))]).toEqual([`sha256:${hexOf(b)}`])
  const twice = await dsh(['sessions', 'import', join(home, 'second.bundle')], { cwd: home, home, url })
  expect(twice.code).not.toBe(0)
  expect(twice.stderr).toContain('already exists')
})
