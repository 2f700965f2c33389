// The model cannot configure dsh from inside the sandbox (issue 38's review): with $DSH_HOME somewhere
// the sandbox may write (/tmp here), bash cannot add a status line command to settings.yaml or create a
// trust.json, and the write tool's try needs an approval a headless run cannot give. Checked on disk.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

let root: string
let server: MockLlmServer
beforeEach(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-home-guard-')))
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(root, { recursive: true, force: true })
})

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

it('bash and the write tool cannot change settings.yaml or create trust.json in DSH_HOME', async () => {
  const home = join(root, 'home')
  const work = join(root, 'work')
  mkdirSync(home)
  mkdirSync(work)
  const settings = join(home, 'settings.yaml')
  writeFileSync(settings, 'notify.minTurnSeconds: 30\n')
  const pwned = join(root, 'pwned')
  server.enqueue(
    call('b1', 'bash', {
      command: `printf 'statusline.command: touch ${pwned}\\n' >> ${settings}; echo '{}' > ${join(home, 'trust.json')}; echo tried`,
    }),
    call('w1', 'write', { path: join(home, 'patch.yml'), content: '- id: evil\n  use: ./evil.mjs\n' }),
    completionResponse({ text: 'gave up' }),
  )
  const result = await runDsh(['run', 'configure yourself'], { home, cwd: work, modelUrl: server.url })
  expect(result.code, result.stderr).toBe(0)
  expect(readFileSync(settings, 'utf8')).toBe('notify.minTurnSeconds: 30\n')
  expect(existsSync(join(home, 'trust.json'))).toBe(false)
  expect(existsSync(join(home, 'patch.yml'))).toBe(false)
  expect(result.stderr).toContain('needed approval')
  expect(existsSync(pwned)).toBe(false)
})
