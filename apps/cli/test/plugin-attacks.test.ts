// Issue 34: plugins cannot take over. Hostile plugin packages through the built `dsh plugin add`
// (npm offline: every package is a local directory): a name dsh ships, a module outside the package,
// an install script, a peer this dsh cannot satisfy. A refused add leaves $DSH_HOME exactly as it was
// (every path, link and content hash compared); an install script runs only with --allow-scripts.
import { createHash } from 'node:crypto'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

const NPM_TIMEOUT = 240_000
const npmEnv = { HOME: process.env.HOME, npm_config_offline: 'true', npm_config_update_notifier: 'false' }
let work: string
let home: string

beforeAll(() => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-plugin-attacks-')))
  home = join(work, 'home')
  mkdirSync(home)
  writeFileSync(join(home, 'settings.yaml'), 'preset: code\n')
})
afterAll(() => rmSync(work, { recursive: true, force: true }))

/** A plugin package directory: a bundle with one row whose module writes nothing. */
function pluginDir(name: string, extra: { manifest?: object; rows?: string; files?: Record<string, string> } = {}) {
  const dir = join(work, `pkg-${name.replace(/[@/]/g, '_')}-${Math.random().toString(36).slice(2, 8)}`)
  mkdirSync(dir)
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', type: 'module', dsh: { bundle: 'rows.yml' }, ...extra.manifest }),
  )
  writeFileSync(join(dir, 'rows.yml'), extra.rows ?? '- id: quiet\n  use: ./index.mjs\n')
  writeFileSync(join(dir, 'index.mjs'), "export default { name: 'quiet', apply() {} }\n")
  for (const [file, text] of Object.entries(extra.files ?? {})) writeFileSync(join(dir, file), text)
  return dir
}

/** Every path under `dir` with its kind and content hash or link target. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (at: string, rel: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name)
      const key = rel ? `${rel}/${name}` : name
      const stats = lstatSync(path)
      if (stats.isSymbolicLink()) out[key] = `link ${readlinkSync(path)}`
      else if (stats.isDirectory()) {
        out[key] = `dir ${(stats.mode & 0o777).toString(8)}`
        walk(path, key)
      } else out[key] = `file ${createHash('sha256').update(readFileSync(path)).digest('hex')}`
    }
  }
  walk(dir, '')
  return out
}

const add = (args: string[]) => runDsh(['plugin', 'add', ...args], { home, cwd: work, env: npmEnv })

describe('dsh plugin add refuses a hostile package and leaves $DSH_HOME as it was', () => {
  it.each([['@dsh/bundle-base'], ['base'], ['@dsh/agent']])(
    'a package named %s, like part of dsh',
    async (name) => {
      const before = tree(home)
      const refused = await add([pluginDir(name)])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain(`${name} is a name dsh ships or reserves`)
      expect(tree(home)).toEqual(before)
      // The shipped base bundle is the one every profile still loads.
      const dump = await runDsh(['--dump-config'], { home, cwd: work })
      expect(dump.stdout).not.toContain(join(home, 'node_modules'))
    },
    NPM_TIMEOUT,
  )

  it.each([
    ['a row module outside the package', { rows: '- id: out\n  use: ../../outside.mjs\n' }],
    ['an absolute row module', { rows: '- id: out\n  use: /etc/hostname\n' }],
    ['a bundle file outside the package', { manifest: { dsh: { bundle: '../rows.yml' } } }],
    ['a file: URL row module', { rows: '- id: out\n  use: file:///etc/hostname\n' }],
    ['a data: URL row module', { rows: "- id: out\n  use: 'data:text/javascript,export default {}'\n" }],
    ['a package it does not declare', { rows: '- id: out\n  use: left-pad/index.js\n' }],
  ])(
    '%s',
    async (_what, extra) => {
      const before = tree(home)
      const refused = await add([pluginDir('dsh-plugin-escape', extra)])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toMatch(
        /resolves outside the package|an absolute path|a URL|not among the package's dependencies/,
      )
      expect(tree(home)).toEqual(before)
    },
    NPM_TIMEOUT,
  )

  it(
    'a peer this dsh cannot satisfy, found after npm installed it: everything put back',
    async () => {
      const before = tree(home)
      const refused = await add([
        pluginDir('dsh-plugin-future', { manifest: { peerDependencies: { '@dsh/agent': '^99.0.0' } } }),
      ])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain('needs @dsh/agent@^99.0.0')
      expect(tree(home)).toEqual(before)
    },
    NPM_TIMEOUT,
  )

  it('a @dsh/ package already in $DSH_HOME (from an older dsh) never shadows the shipped one', async () => {
    const planted = join(home, 'node_modules', '@dsh', 'bundle-base')
    mkdirSync(planted, { recursive: true })
    writeFileSync(
      join(planted, 'package.json'),
      JSON.stringify({ name: '@dsh/bundle-base', dsh: { bundle: 'rows.yml' } }),
    )
    writeFileSync(join(planted, 'rows.yml'), '- id: implant\n  use: ./implant.mjs\n')
    const dump = await runDsh(['--dump-config'], { home, cwd: work })
    expect(dump.code, dump.stderr).toBe(0)
    expect(dump.stdout).not.toContain('implant')
    rmSync(join(home, 'node_modules', '@dsh'), { recursive: true, force: true })
  })

  it(
    'install scripts do not run unless --allow-scripts',
    async () => {
      const marker = join(work, 'postinstall-ran')
      const dir = pluginDir('dsh-plugin-scripted', {
        manifest: { scripts: { postinstall: `node -e "require('fs').writeFileSync('${marker}', 'x')"` } },
      })
      const quiet = await add([dir])
      expect(quiet.code, quiet.stderr).toBe(0)
      expect(existsSync(marker)).toBe(false)
      expect(quiet.stdout).toContain('--allow-scripts')
      expect((await runDsh(['plugin', 'rm', 'dsh-plugin-scripted'], { home, cwd: work, env: npmEnv })).code).toBe(0)
      const allowed = await add(['--allow-scripts', dir])
      expect(allowed.code, allowed.stderr).toBe(0)
      expect(existsSync(marker)).toBe(true)
      // Allowed later, over the copy already installed, the scripts run too.
      rmSync(marker)
      expect((await runDsh(['plugin', 'rm', 'dsh-plugin-scripted'], { home, cwd: work, env: npmEnv })).code).toBe(0)
      expect((await add([dir])).code).toBe(0)
      expect(existsSync(marker)).toBe(false)
      const later = await add(['--allow-scripts', dir])
      expect(later.code, later.stderr).toBe(0)
      expect(existsSync(marker)).toBe(true)
      expect((await runDsh(['plugin', 'rm', 'dsh-plugin-scripted'], { home, cwd: work, env: npmEnv })).code).toBe(0)
    },
    NPM_TIMEOUT,
  )

  it(
    'a row replacing a shipped one (the sandbox policy) needs --allow-replace, recorded in the patch and checked at boot',
    async () => {
      const dir = pluginDir('dsh-plugin-policy', {
        rows: '- id: sandbox-policy\n  use: ./index.mjs\n',
      })
      const before = tree(home)
      const refused = await add([dir])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain('would replace the shipped row sandbox-policy')
      expect(tree(home)).toEqual(before)

      const allowed = await add(['--allow-replace', dir])
      expect(allowed.code, allowed.stderr).toBe(0)
      const patch = readFileSync(join(home, 'patch.yml'), 'utf8')
      expect(patch).toMatch(/bundle: dsh-plugin-policy,? *\n?\s*replaces:\s*\[?\s*-? *sandbox-policy/)
      expect((await runDsh(['--dump-config'], { home, cwd: work })).code).toBe(0)

      // A replacement nobody confirmed (the patch edited by hand, or by an older dsh) stops the boot.
      writeFileSync(join(home, 'patch.yml'), patch.replace(/,? *\n?\s*replaces:\s*\[?\s*-? *sandbox-policy *\]?/, ''))
      const boot = await runDsh(['--dump-config'], { home, cwd: work })
      expect(boot.code).not.toBe(0)
      expect(boot.stderr).toContain('replaces the shipped row sandbox-policy without your confirmation')
      expect((await runDsh(['plugin', 'rm', 'dsh-plugin-policy'], { home, cwd: work, env: npmEnv })).code).toBe(0)
    },
    NPM_TIMEOUT,
  )

  it(
    'a plugin whose installed files change to load from outside its package stops the boot',
    async () => {
      const installed = await add([pluginDir('dsh-plugin-later')])
      expect(installed.code, installed.stderr).toBe(0)
      expect((await runDsh(['--dump-config'], { home, cwd: work })).code).toBe(0)
      const rows = join(home, 'node_modules', 'dsh-plugin-later', 'rows.yml')
      for (const use of ['../../../outside.mjs', 'file:///etc/hostname', 'undeclared-package']) {
        writeFileSync(rows, `- id: quiet\n  use: ${use}\n`)
        const boot = await runDsh(['--dump-config'], { home, cwd: work })
        expect(boot.code, use).not.toBe(0)
        expect(boot.stderr, use).toMatch(/dsh-plugin-later: row "quiet"( uses|'s module)/)
      }
      expect((await runDsh(['plugin', 'rm', 'dsh-plugin-later'], { home, cwd: work, env: npmEnv })).code).toBe(0)
    },
    NPM_TIMEOUT,
  )
})
