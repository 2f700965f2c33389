// Images end to end in the product: the built `dsh run` against the mock Chat Completions server.
// What reaches the wire is read from the recorded request bodies; what was stored, from $DSH_HOME.
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { blobFiles, dsh, sessionEvents } from './cli.js'
import { png } from './images.js'

type Part = { type: string; text?: string; image_url?: { url: string } }
type Body = { messages: Array<{ role: string; content: string | Part[] | null }> }

const parts = (request: RecordedRequest): Part[] =>
  (request.body as Body).messages.flatMap((message) => (Array.isArray(message.content) ? message.content : []))

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-images-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

it('a PNG read by `read` reaches the next request as an image part with the file bytes', async () => {
  const bytes = await png(32, 24)
  writeFileSync(join(home, 'shot.png'), bytes)
  await using server = await startMockLlmServer({
    responses: [
      completionResponse({ toolCalls: [{ id: 'call_1', name: 'read', arguments: '{"path":"shot.png"}' }] }),
      completionResponse({ text: 'A blue rectangle.' }),
    ],
  })
  const ran = await dsh(['run', '--model', 'deepseek-flash', 'what is in shot.png?'], {
    cwd: home,
    home,
    url: server.url,
  })
  expect(ran.stderr).toBe('')
  expect(ran.code).toBe(0)
  const images = parts(server.requests[1] as RecordedRequest).filter((part) => part.type === 'image_url')
  expect(images).toEqual([
    { type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from(bytes).toString('base64')}` } },
  ])
  // The log holds the reference, the store holds the bytes under their hash.
  const hex = createHash('sha256').update(bytes).digest('hex')
  const result = sessionEvents(home).find((event) => event.type === 'tool/result')
  expect(JSON.stringify(result)).toContain(`sha256:${hex}`)
  expect(JSON.stringify(result)).not.toContain(Buffer.from(bytes).toString('base64'))
  expect(blobFiles(home)).toEqual([hex])
})

it('`dsh run --attach` sends the image with the task; a text-only model gets a placeholder it can read', async () => {
  const bytes = await png(20, 20, '#00aa00')
  writeFileSync(join(home, 'shot.png'), bytes)
  writeFileSync(join(home, 'notes.txt'), 'remember the milk\n')
  await using server = await startMockLlmServer({
    responses: [completionResponse({ text: 'Green.' }), completionResponse({ text: 'I cannot see it.' })],
  })
  const attach = ['--attach', 'shot.png', '--attach', 'notes.txt']
  const seen = await dsh(['run', '--model', 'deepseek-flash', ...attach, 'describe'], {
    cwd: home,
    home,
    url: server.url,
  })
  expect(seen.code).toBe(0)
  const first = parts(server.requests[0] as RecordedRequest)
  expect(first.find((part) => part.type === 'image_url')?.image_url?.url).toBe(
    `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`,
  )
  expect(first.some((part) => part.text?.includes('remember the milk'))).toBe(true)

  // deepseek-v4-pro is catalogued as text-only: no image bytes go out, a placeholder says why.
  const blind = await dsh(['run', '--model', 'deepseek-v4-pro', '--attach', 'shot.png', 'describe'], {
    cwd: home,
    home,
    url: server.url,
  })
  expect(blind.code).toBe(0)
  const second = parts(server.requests[1] as RecordedRequest)
  expect(second.some((part) => part.type === 'image_url')).toBe(false)
  expect(second.some((part) => part.text?.includes('takes text only'))).toBe(true)
})

it('a missing or unsupported attachment is a usage error naming the file', async () => {
  writeFileSync(join(home, 'data.bin'), Buffer.from([0, 1, 2, 3, 0, 255]))
  await using server = await startMockLlmServer({ responses: [] })
  const missing = await dsh(['run', '--attach', 'nope.png', 'x'], { cwd: home, home, url: server.url })
  expect(missing.code).toBe(2)
  expect(missing.stderr).toContain('nope.png')
  const binary = await dsh(['run', '--attach', 'data.bin', 'x'], { cwd: home, home, url: server.url })
  expect(binary.code).toBe(2)
  expect(binary.stderr).toContain('data.bin is neither an image')
  expect(server.requests).toHaveLength(0)
})
