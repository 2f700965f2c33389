// `@` references never carry a secret store to the model (issue 34), through the built `dsh` with the
// mock model: `@~/.ssh` and `@~/.ssh/id_rsa` become a note, a listing of `~` or of `$DSH_HOME` leaves
// the credential entries out and says so, in the sandboxed default and in danger-full-access. The
// durable log and the request the model received are read back.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AnySessionEvent, eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, startDsh } from './dsh-child.js'

const KEY = 'sk-attach-secret-do-not-leak'

let root: string
let server: MockLlmServer

beforeEach(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-attach-secrets-')))
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(root, { recursive: true, force: true })
})

/** A user home with an ssh key and a browser profile, a DSH_HOME with credentials, a workspace. */
function plant() {
  const userHome = join(root, 'user')
  const dshHome = join(root, 'dsh-home')
  const workspace = join(root, 'project')
  mkdirSync(join(userHome, '.ssh'), { recursive: true })
  writeFileSync(join(userHome, '.ssh', 'id_rsa'), `${KEY}-ssh\n`)
  mkdirSync(join(userHome, '.mozilla', 'firefox'), { recursive: true })
  writeFileSync(join(userHome, 'notes.txt'), 'plain\n')
  mkdirSync(dshHome)
  writeFileSync(join(dshHome, '.credentials.yaml'), `OTHER_API_KEY: ${KEY}-dsh\n`, { mode: 0o600 })
  writeFileSync(join(dshHome, 'readme.txt'), 'plain\n')
  mkdirSync(workspace)
  return { userHome, dshHome, workspace }
}

const userText = (events: AnySessionEvent[]) =>
  eventData(events, 'user/message')
    .flatMap((data) => (typeof data.message.content === 'string' ? [data.message.content] : data.message.content))
    .map((block) => (typeof block === 'string' ? block : block.type === 'text' ? block.text : ''))
    .join('\n')

describe('@ references and secret paths', () => {
  it.each([['workspace-write'], ['danger-full-access']])(
    'in %s: secret files and directories become a note, listings leave them out',
    async (mode) => {
      const { userHome, dshHome, workspace } = plant()
      server.enqueue(completionResponse({ text: 'seen' }))
      const prompt = `look at @~/.ssh @~/.ssh/id_rsa @~ @${dshHome}`
      const run = await startDsh(['run', '--permission-mode', mode, prompt], {
        home: dshHome,
        cwd: workspace,
        modelUrl: server.url,
        env: { HOME: userHome },
      }).exited
      expect(run.code, run.stderr).toBe(0)
      const text = userText(durableEvents(dshHome))
      expect(text).not.toContain(KEY)
      expect(text).not.toMatch(/id_rsa\n|\.credentials\.yaml\n|\.ssh\/\n|\.mozilla\/\n/)
      expect(text).toContain('<context path="~/.ssh" kind="hidden">')
      expect(text).toContain('<context path="~/.ssh/id_rsa" kind="hidden">')
      // The plain entries are still listed, with a note for the hidden ones.
      expect(text).toMatch(/<context path="~" kind="directory"[^>]*>[^<]*notes\.txt[^<]*2 entries not listed/)
      expect(text).toMatch(/kind="directory"[^>]*>[^<]*readme\.txt[^<]*1 entry not listed/)
      expect(JSON.stringify(server.requests)).not.toContain(KEY)
    },
    30_000,
  )
})
