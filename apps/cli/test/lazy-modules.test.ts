// Start-up cost: libraries only some sessions need are loaded when first used, not by every `dsh run`
// (decisions 350, 390); config files a start already parsed are read from the parse cache (391). The built CLI runs under a module recorder (fixtures/record-modules.mjs); a turn that
// only answers must not load them, and a turn that edits a file loads the diff library (the recorder
// and the lazy load both work).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'
import { afterEach, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

const recorder = fileURLToPath(new URL('fixtures/record-modules.mjs', import.meta.url))
const HEAVY = [
  'vscode-languageserver-protocol',
  'vscode-jsonrpc',
  '@xterm/headless',
  'image-size',
  'node_modules/diff/',
  'croner',
  'node_modules/ajv/dist/ajv.js',
  'node_modules/undici/',
  'sharp',
  '@agentclientprotocol/sdk',
  'node_modules/zod/',
]

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

async function loadedBy(
  respond: NonNullable<Parameters<typeof startMockLlmServer>[0]>['respond'],
  setup?: (home: string) => void,
  home = mkdtempSync(join(tmpdir(), 'dsh-lazy-')),
) {
  dirs.push(home)
  setup?.(home)
  await using server = await startMockLlmServer({ respond })
  const modules = join(home, 'modules.txt')
  writeFileSync(modules, '')
  const result = await runDsh(['run', '--output', 'json', 'go'], {
    home,
    modelUrl: server.url,
    env: { NODE_OPTIONS: `--import=${recorder}`, DSH_TEST_MODULES_FILE: modules },
  })
  expect(result.code, result.stderr).toBe(0)
  const loaded = readFileSync(modules, 'utf8').split('\n')
  return { home, loaded, heavy: HEAVY.filter((name) => loaded.some((path) => path.includes(name))) }
}

it('a run that only answers loads none of the libraries that tools, terminals, schedules or images need', async () => {
  const { loaded, heavy } = await loadedBy(() => completionResponse({ text: 'nothing to do' }))
  expect(loaded.some((path) => path.includes('/cli/dist/commands/run.js'))).toBe(true)
  expect(heavy).toEqual([])
})

it('a second start in the same home reads its profile, patches and presets from the parse cache: no YAML library', async () => {
  const answer = () => completionResponse({ text: 'nothing to do' })
  // A home patch of the user's own (never in the cache dsh ships) with a config expression in it.
  const patch = (home: string) =>
    writeFileSync(
      join(home, 'patch.yml'),
      '- id: guard-repeat\n  config: { warnAfter: 3, stopAfter: 5 }\n  disabled: !platform win32\n',
    )
  const first = await loadedBy(answer, patch)
  expect(readdirSync(join(first.home, 'cache', 'parsed')).length).toBeGreaterThan(0)
  const second = await loadedBy(answer, undefined, first.home)
  expect(second.loaded.some((path) => path.includes('/cli/dist/commands/run.js'))).toBe(true)
  expect(second.loaded.filter((path) => path.includes('node_modules/yaml/'))).toEqual([])

  // An edit of the patch is a miss: it is parsed again (the YAML library loads).
  writeFileSync(join(first.home, 'patch.yml'), '- id: guard-repeat\n  disabled: true\n')
  const edited = await loadedBy(answer, undefined, first.home)
  expect(edited.loaded.some((path) => path.includes('node_modules/yaml/'))).toBe(true)
})

it('the first edit loads the diff library, and the file is edited', async () => {
  let call = 0
  const { home, heavy } = await loadedBy(
    () => {
      call++
      // The observation policy wants the file read before it is edited.
      if (call === 1)
        return completionResponse({ toolCalls: [{ id: 'r1', name: 'read', arguments: '{"path":"a.txt"}' }] })
      if (call === 2) {
        const edit = { path: 'a.txt', old_string: 'one', new_string: 'two' }
        return completionResponse({ toolCalls: [{ id: 'e1', name: 'edit', arguments: JSON.stringify(edit) }] })
      }
      return completionResponse({ text: 'done' })
    },
    (dir) => writeFileSync(join(dir, 'a.txt'), 'one\n'),
  )
  expect(readFileSync(join(home, 'a.txt'), 'utf8')).toBe('two\n')
  expect(heavy).toContain('node_modules/diff/')
  expect(heavy).toContain('node_modules/ajv/dist/ajv.js')
})
