// The parse cache (decision 391): an unchanged layer, profile or preset file is read back from JSON keyed
// by its text, equal to what parsing it gives; an edited file, a damaged entry or a value JSON cannot
// keep is parsed again; a file that does not parse or check fails every time.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import {
  ConfigExpr,
  loadProfile,
  type ParseCache,
  parseCacheOf,
  parseLayerEntries,
  readLayer,
  readLayerEntries,
} from '../src/index.js'

let dir: string
let cache: ParseCache
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-parse-cache-'))
  cache = { dirs: [join(dir, 'cache')] }
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const LAYER = `
- id: store
  use: '@dsh/session/store/jsonl'
  config:
    dir: !env "DSH_SESSIONS_DIR:"
    limits: [1, 2.5, null, true, "x"]
    nested: { deep: [{ a: !platform linux }] }
- id: off
  use: ./off.mjs
  disabled: !platform win32
`

const entries = () => readdirSync(join(dir, 'cache'))
const write = (name: string, text: string) => {
  writeFileSync(join(dir, name), text)
  return join(dir, name)
}

it('reads an unchanged file back from the cache, expressions included; an edit parses again', () => {
  const file = write('patch.yml', LAYER)
  const parsed = readLayerEntries('patch', file, cache)
  expect(parsed).toEqual(parseLayerEntries(LAYER, file))
  expect(entries()).toHaveLength(1)
  const [entry] = entries()
  // The next read comes from the entry: what it holds is what the read returns.
  const stored = join(dir, 'cache', entry as string)
  writeFileSync(stored, readFileSync(stored, 'utf8').replace('@dsh/session/store/jsonl', '@dsh/from-the-cache'))
  const again = readLayerEntries('patch', file, cache)
  expect(again[0]).toMatchObject({ id: 'store', use: '@dsh/from-the-cache' })
  const config = (again[0] as { config: { dir: unknown; nested: { deep: Array<{ a: unknown }> } } }).config
  expect(config.dir).toBeInstanceOf(ConfigExpr)
  expect(config.dir).toEqual(new ConfigExpr('env', 'DSH_SESSIONS_DIR:'))
  expect(config.nested.deep[0]?.a).toEqual(new ConfigExpr('platform', 'linux'))
  expect(again[1]).toMatchObject({ id: 'off', disabled: new ConfigExpr('platform', 'win32') })

  write('patch.yml', LAYER.replace('./off.mjs', './on.mjs'))
  expect(readLayerEntries('patch', file, cache)[1]).toMatchObject({ use: './on.mjs' })
  expect(entries()).toHaveLength(2)
})

it('parses again what JSON cannot keep, a damaged entry, and a file that fails', () => {
  const infinite = write('inf.yml', '- id: a\n  use: x\n  config: { limit: .inf, zero: -0 }\n')
  for (let i = 0; i < 2; i++)
    expect(readLayer('patch', 'inf', infinite, cache).rows[0]?.config).toEqual({ limit: Infinity, zero: -0 })
  expect(() => entries()).toThrow() // nothing was written, not even the directory

  const file = write('patch.yml', LAYER)
  readLayerEntries('patch', file, cache)
  const stored = join(dir, 'cache', entries()[0] as string)
  writeFileSync(stored, '{"value": [')
  expect(readLayerEntries('patch', file, cache)).toEqual(parseLayerEntries(LAYER, file))
  expect(JSON.parse(readFileSync(stored, 'utf8')).exprs).toHaveLength(3) // rewritten whole

  const broken = write('broken.yml', '- id: a\n  use: [unclosed')
  const twice = write('twice.yml', '- id: a\n  use: x\n- id: a\n  use: y\n')
  for (let i = 0; i < 2; i++) {
    expect(() => readLayerEntries('broken', broken, cache)).toThrow(/CONFIG_INVALID|invalid YAML/)
    expect(() => readLayerEntries('twice', twice, cache)).toThrow(/appears twice/)
  }
})

it('loads a profile through the home cache', () => {
  const home = join(dir, 'home')
  const templates = join(dir, 'templates')
  const profileDir = join(templates, 'mine')
  mkdirSync(profileDir, { recursive: true })
  writeFileSync(join(profileDir, 'profile.yml'), '# my own\nbundles: [base, headless]\n')
  expect(loadProfile(home, 'mine', templates).bundles).toEqual(['base', 'headless'])
  expect(readdirSync(parseCacheOf(home).dirs.at(-1) as string)).toHaveLength(1)
  expect(loadProfile(home, 'mine', templates).bundles).toEqual(['base', 'headless'])
})
