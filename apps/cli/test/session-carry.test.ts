// A session carried to another machine (issue 39): `dsh sessions export ID --format bundle` on one
// $DSH_HOME and workspace, `dsh sessions import` on another. The import brings the image blob and the
// workspace checkpoints (a files rewind works there), resumes with its history, and refuses a bundle
// edited after export naming the event, an id already taken, and a workspace that does not exist.
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { png } from '../../../packages/attachments/test/images.js'
import { ExitCode } from '../src/exit-codes.js'
import { runDsh } from './dsh-child.js'

let root: string
let server: MockLlmServer
let id: string
let bundle: string
const at = (...parts: string[]) => join(root, ...parts)
const dsh = (home: string, cwd: string, ...args: string[]) =>
  runDsh(args, { home: at(home), cwd: at(cwd), modelUrl: server.url })

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'dsh-carry-'))
  for (const dir of ['home-a', 'home-b', 'home-c', 'work-a']) mkdirSync(at(dir))
  writeFileSync(at('work-a', 'README.md'), '# project\n')
  writeFileSync(at('work-a', 'shot.png'), await png(8, 8, '#cc3300'))
  server = await startMockLlmServer({
    responses: [
      completionResponse({
        toolCalls: [
          { id: 'c1', name: 'write', arguments: JSON.stringify({ path: 'notes.txt', content: 'carried\n' }) },
        ],
      }),
      completionResponse({ text: 'Wrote notes.txt.' }),
    ],
  })
  const run = await dsh(
    'home-a',
    'work-a',
    'run',
    '--output',
    'json',
    '--model',
    'deepseek-flash',
    '--attach',
    'shot.png',
    'write the notes',
  )
  expect(run.code).toBe(0)
  id = JSON.parse(run.stdout).sessionId
  expect(readFileSync(at('work-a', 'notes.txt'), 'utf8')).toBe('carried\n')
  const exported = await dsh('home-a', 'work-a', 'sessions', 'export', id, '--format', 'bundle')
  expect(exported.code).toBe(0)
  bundle = exported.stdout
  writeFileSync(at('session.bundle'), bundle)
}, 60_000)
afterAll(async () => {
  await server.close()
  rmSync(root, { recursive: true, force: true })
})

it('imports on another machine in another folder with its image and checkpoints; the files rewind and the session resumes', async () => {
  // The other machine: its own home, and the repository checked out at another path (as the session left it).
  cpSync(at('work-a'), at('work-b'), { recursive: true })
  const imported = await dsh('home-b', 'work-b', 'sessions', 'import', at('session.bundle'), '--cwd', at('work-b'))
  expect(imported.stderr).toContain('1 attachment blob(s), 2 of 2 workspace checkpoint(s)')
  expect(imported.stderr).toContain('chain verified')
  expect(imported.code).toBe(0)
  expect(imported.stdout.trim()).toBe(id)
  expect(readdirSync(at('home-b', 'blobs', 'sha256'))).toHaveLength(1)
  const header = JSON.parse(readFileSync(at('home-b', 'sessions', `${id}.jsonl`), 'utf8').split('\n')[0] as string)
  expect(header.cwd).toBe(at('work-b'))
  expect((await dsh('home-b', 'work-b', 'sessions', 'verify', id)).code).toBe(0)

  // The checkpoints came along: a files rewind to message 1 takes notes.txt back out of work-b.
  const rewound = await dsh('home-b', 'work-b', 'sessions', 'rewind', id, '--to', '1', '--files')
  expect(rewound.code).toBe(0)
  expect(existsSync(at('work-b', 'notes.txt'))).toBe(false)
  expect(readFileSync(at('work-b', 'README.md'), 'utf8')).toBe('# project\n')

  // It resumes with its history: the next request carries the first message and the image.
  const before = server.requests.length
  server.enqueue(completionResponse({ text: 'Still here.' }))
  const resumed = await dsh('home-b', 'work-b', 'run', '--model', 'deepseek-flash', '--resume', id, 'and now?')
  expect(resumed.code).toBe(0)
  const body = JSON.stringify((server.requests[before] as RecordedRequest).body)
  expect(body).toContain('write the notes')
  expect(body).toContain('Wrote notes.txt.')
  expect(body.includes('image_url')).toBe(true) // the image, read from the imported blob
  expect(body).toContain('and now?')

  // The id is taken now: refused unless imported under another.
  const twice = await dsh('home-b', 'work-b', 'sessions', 'import', at('session.bundle'), '--cwd', at('work-b'))
  expect(twice.code).toBe(ExitCode.USAGE)
  expect(twice.stderr).toContain('--as NEW_ID')
  const copy = `${id.slice(0, 8)}-copy`
  const renamed = await dsh(
    'home-b',
    'work-b',
    'sessions',
    'import',
    '--as',
    copy,
    '--cwd',
    at('work-b'),
    at('session.bundle'),
  )
  expect(renamed.code).toBe(0)
  expect(existsSync(at('home-b', 'sessions', `${copy}.jsonl`))).toBe(true)
})

it('refuses a bundle whose log was edited after export, naming the event, and writes nothing', async () => {
  const lines = bundle.trimEnd().split('\n')
  const edited = lines.findIndex((line) => line.includes('Wrote notes.txt.'))
  const seq = JSON.parse(lines[edited] as string).seq
  lines[edited] = (lines[edited] as string).replace('Wrote notes.txt.', 'Wrote nothing.')
  writeFileSync(at('edited.bundle'), `${lines.join('\n')}\n`)
  const refused = await dsh('home-c', 'work-a', 'sessions', 'import', at('edited.bundle'))
  expect(refused.code).toBe(ExitCode.NOT_VERIFIED)
  expect(refused.stderr).toContain(`event ${seq} was changed after it was written`)
  expect(refused.stderr).toContain('nothing was imported')
  expect(existsSync(at('home-c', 'sessions', `${id}.jsonl`))).toBe(false)

  // A line removed (its seal intact) breaks the chain at the next one.
  const cut = bundle.trimEnd().split('\n')
  cut.splice(edited, 1)
  writeFileSync(at('cut.bundle'), `${cut.join('\n')}\n`)
  const missing = await dsh('home-c', 'work-a', 'sessions', 'import', at('cut.bundle'))
  expect(missing.code).toBe(ExitCode.NOT_VERIFIED)
  expect(missing.stderr).toContain(`event ${seq} is missing`)
})

it('refuses a workspace that does not exist on this machine, with the flag that fixes it', async () => {
  renameSync(at('work-a'), at('work-a-moved'))
  try {
    const refused = await dsh('home-c', 'home-c', 'sessions', 'import', at('session.bundle'))
    expect(refused.code).toBe(ExitCode.USAGE)
    expect(refused.stderr).toContain(`${at('work-a')} does not exist on this machine; give --cwd DIR`)
    expect(existsSync(at('home-c', 'sessions', `${id}.jsonl`))).toBe(false)
  } finally {
    renameSync(at('work-a-moved'), at('work-a'))
  }
})

it('imported where its workspace is, the stored chain is the original one: verify prints the same last hash as at home', async () => {
  const imported = await dsh('home-c', 'work-a', 'sessions', 'import', at('session.bundle'))
  expect(imported.code).toBe(0)
  expect(imported.stderr).toContain('chain verified, stored identical')
  const hashOf = (text: string) => /last hash ([0-9a-f]{64})/.exec(text)?.[1]
  const home = await dsh('home-a', 'work-a', 'sessions', 'verify', id)
  const there = await dsh('home-c', 'work-a', 'sessions', 'verify', id)
  expect(there.code).toBe(0)
  expect(hashOf(there.stdout)).toBeDefined()
  expect(hashOf(there.stdout)).toBe(hashOf(home.stdout))
})
