// Prompts through the session host: `@path` puts the file's content (with its version) into the
// logged message, so resume shows what the model saw after the file changed; a directory gives its
// listing; `@session:ID` a digest; attachments become image refs or copied text; bad input is named.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import LocalAttachments from '@dsh/attachments/local'
import type { UserMessage } from '@dsh/llm'
import SessionQuery from '@dsh/session/store/query'
import { dataOf, startInProcess, text } from '@dsh/test-support/in-process'
import LocalFs from '@dsh/world/fs/local'
import { afterEach, expect, it } from 'vitest'
import { parseAttachments, referencesIn, SessionHost } from '../../src/host/index.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAADElEQVQImWNgMD4DAAE2AQDyHVEtAAAAAElFTkSuQmCC',
  'base64',
)

const textOf = (message: UserMessage | undefined) =>
  (message?.content ?? []).map((block) => (block.type === 'text' ? block.text : `<image ${block.ref}>`)).join('\n')

it('reads @path into the logged message with its version; resume keeps it after the file changes', async () => {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-prompt-')))
  dirs.push(home)
  const ws = join(home, 'ws')
  mkdirSync(join(ws, 'src'), { recursive: true })
  writeFileSync(join(ws, 'src', 'a.ts'), 'export const answer = 41\n')
  writeFileSync(join(ws, 'shot.png'), PNG)
  const { root, adapter } = await startInProcess({
    sessionsDir: join(home, 'sessions'),
    cwd: ws,
    script: [text('It exports answer.'), text('Earlier you asked about a.ts.')],
    before: async (ctx) => {
      await ctx.plugin(LocalFs, { cwd: ws })
      await ctx.plugin(LocalAttachments, { dir: join(home, 'blobs') })
      await ctx.plugin(SessionQuery)
    },
  })
  const host = new SessionHost(root, { name: 'the test', closeReason: 'the test ended' })
  try {
    const agent = await host.create({ cwd: ws })
    const id = agent.session.id
    await host.prompt(id, { text: 'explain @src/a.ts, see @src and @alice', attachments: [{ path: 'shot.png' }] })
    await agent.whenIdle()
    const sent = textOf(adapter.dispatches[0]?.request.messages[0] as UserMessage)
    expect(sent).toContain('<context path="src/a.ts" bytes="25" version=')
    expect(sent).toContain('export const answer = 41')
    expect(sent).toMatch(/<context path="src" kind="directory" entries="1">\na\.ts\n/)
    expect(sent).toMatch(/\[attached image shot\.png: image\/png, 1x1\]\n<image sha256:[0-9a-f]{64}>/)
    expect(sent).not.toContain('alice"') // not a file: stays text only
    await root.sessions.flush(agent.session)
    await host.release(id)

    writeFileSync(join(ws, 'src', 'a.ts'), 'export const answer = 42\n')
    const durable = await root.sessionQuery.read(id)
    const logged = textOf(dataOf(durable, 'user/message')[0]?.message)
    expect(logged).toContain('export const answer = 41')
    expect(logged).not.toContain('answer = 42')

    const later = await host.create({ cwd: ws })
    await host.prompt(later.session.id, { text: `what did I ask in @session:${id} ?` })
    await later.whenIdle()
    const digest = textOf(adapter.dispatches[1]?.request.messages[0] as UserMessage)
    expect(digest).toContain(`<context session="${id}"`)
    expect(digest).toContain('assistant: It exports answer.')
  } finally {
    await host.close()
  }
})

it('names bad attachments and lists references as the host reads them', () => {
  expect(referencesIn('see @a.ts and @"my file.md", mail x@y.z, @session:abc')).toEqual([
    'a.ts',
    'my file.md',
    'session:abc',
  ])
  expect(parseAttachments([{ path: 'a.png' }, { data: 'AAAA', mimeType: 'image/png', name: 'n' }])).toEqual([
    { path: 'a.png' },
    { data: 'AAAA', mimeType: 'image/png', name: 'n' },
  ])
  expect(() => parseAttachments([{ path: 'a', data: 'AAAA' }])).toThrow(/exactly one of "path"/)
  expect(() => parseAttachments('a.png')).toThrow(/must be an array/)
})
