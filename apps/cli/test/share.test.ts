// /share (issue 39) through the built CLI, as the terminal chat, the web page and RPC dispatch it: the
// session as one HTML page in $DSH_HOME/shares (the transcript embedded), `no-tools` leaving tool
// outputs out, and the user's share.command handed the file (its first line of output shown).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

let home: string
let project: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-share-'))
  project = join(home, 'project')
  mkdirSync(project)
  writeFileSync(join(project, 'notes.txt'), 'the notes say ship it\n')
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

const dsh = (args: string[]) => runDsh(args, { home, cwd: project, modelUrl: server.url })

it('writes the session as one HTML page and hands it to share.command', async () => {
  server.enqueue(
    completionResponse({ toolCalls: [{ id: 'r1', name: 'read', arguments: JSON.stringify({ path: 'notes.txt' }) }] }),
    completionResponse({ text: 'Shipping.' }),
  )
  const run = await dsh(['run', '--output', 'json', 'read the notes'])
  expect(run.code, run.stderr).toBe(0)
  const id = JSON.parse(run.stdout).sessionId as string
  const page = join(home, 'shares', `dsh-${id}.html`)

  const shared = await dsh(['run', '--resume', id, '/share'])
  expect(shared.code, shared.stderr).toBe(0)
  expect(shared.stdout).toContain(`wrote ${page}`)
  const html = readFileSync(page, 'utf8')
  expect(html).toContain('window.__DSH_EXPORT__')
  expect(html).toContain('the notes say ship it')

  const trimmed = await dsh(['run', '--resume', id, '/share no-tools'])
  expect(trimmed.code).toBe(0)
  expect(readFileSync(page, 'utf8')).not.toContain('the notes say ship it')

  const out = join(home, 'uploaded')
  mkdirSync(out)
  const command = `f() { cp "$1" ${out}/ && echo "https://share.example/$(basename "$1")"; }; f`
  expect((await dsh(['config', 'set', 'share.command', command])).code).toBe(0)
  const uploaded = await dsh(['run', '--resume', id, '/share'])
  expect(uploaded.code, uploaded.stderr).toBe(0)
  expect(uploaded.stdout).toContain(`share.command: https://share.example/dsh-${id}.html`)
  expect(existsSync(join(out, `dsh-${id}.html`))).toBe(true)
})
