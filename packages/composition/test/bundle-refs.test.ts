// A patch naming a bundle package (`- bundle: NAME`), the way an out-of-tree plugin installed into
// $DSH_HOME joins the tree: its rows apply at that point of the patch, resolved from the package, and
// boot imports its modules from there (decision 310).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  applyLayers,
  boot,
  dumpTree,
  type Layer,
  parseLayerText,
  profileLayers,
  readLayer,
  readUserLayers,
} from '../src/index.js'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-bundle-refs-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

/** An installed package under $DSH_HOME/node_modules (its `exports` hide package.json, as many do). */
function installPackage(name: string, manifest: Record<string, unknown>, files: Record<string, string>): string {
  const dir = join(home, 'node_modules', name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module', ...manifest }))
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text)
  return dir
}

const codeOf = (fn: () => unknown): string => {
  try {
    fn()
  } catch (error) {
    if (HarnessError.is(error)) return `${error.code}: ${error.message}`
    throw error
  }
  return 'no error'
}

const baseLayer: Layer = { kind: 'bundle', label: 'bundle base', rows: parseLayerText('- id: a\n  use: ./a.mjs', 'b') }

describe('a patch naming a bundle package', () => {
  it('splices the bundle rows in at that point; later rows of the patch patch them; boot imports them', async () => {
    const log = join(home, 'greetings.log')
    installPackage(
      'dsh-plugin-greet',
      { exports: { './greet': './greet.mjs' }, dsh: { bundle: 'rows.yml' } },
      {
        'rows.yml': '- id: greet\n  use: dsh-plugin-greet/greet\n  config: { text: hello }\n',
        'greet.mjs': [
          "import { appendFileSync } from 'node:fs'",
          `export default { name: 'greet', apply(ctx, config) { appendFileSync(${JSON.stringify(log)}, config.text + '\\n') } }`,
        ].join('\n'),
      },
    )
    const patch = join(home, 'patch.yml')
    writeFileSync(patch, '- bundle: dsh-plugin-greet\n- id: greet\n  config: { text: patched }\n')
    const layers = readUserLayers('home', 'home patch', patch, home)
    expect(layers.map((layer) => [layer.kind, layer.label])).toEqual([
      ['bundle', 'bundle dsh-plugin-greet (named by home patch)'],
      ['home', 'home patch'],
    ])
    const tree = applyLayers(layers, home)
    expect(tree.rows).toMatchObject([
      {
        id: 'greet',
        use: 'dsh-plugin-greet/greet',
        config: { text: 'patched' },
        origin: 'bundle dsh-plugin-greet (named by home patch)',
        patchedBy: ['home patch'],
      },
    ])
    expect(dumpTree(tree)).toContain('# from bundle dsh-plugin-greet (named by home patch); patched by home patch')
    const runtime = await boot(tree)
    expect(runtime.rowIds).toEqual(['greet'])
    await runtime.dispose()
    expect(readFileSync(log, 'utf8')).toBe('patched\n')
  })

  it('a disabled reference leaves the bundle out, installed or not', () => {
    const patch = join(home, 'patch.yml')
    writeFileSync(patch, '- bundle: not-installed\n  disabled: true\n- id: a\n  disabled: true\n')
    const tree = applyLayers([baseLayer, ...readUserLayers('home', 'home patch', patch, home)], home)
    expect(tree.rows.map((row) => [row.id, row.disabled])).toEqual([['a', true]])
  })

  it('a --patch file elsewhere finds bundles installed in $DSH_HOME', () => {
    installPackage('dsh-plugin-x', { dsh: { bundle: 'rows.yml' } }, { 'rows.yml': '- id: x\n  use: ./x.mjs\n' })
    const elsewhere = mkdtempSync(join(tmpdir(), 'dsh-bundle-refs-patch-'))
    try {
      writeFileSync(join(elsewhere, 'p.yml'), '- bundle: dsh-plugin-x\n')
      const profile = { name: 'p', dir: join(home, 'profiles', 'p'), bundles: [] }
      const layers = profileLayers({ home, profile, patches: ['p.yml'], cwd: elsewhere })
      const tree = applyLayers(layers, home)
      expect(tree.rows).toMatchObject([{ id: 'x', baseDir: join(home, 'node_modules', 'dsh-plugin-x') }])
    } finally {
      rmSync(elsewhere, { recursive: true, force: true })
    }
  })

  it('says what is wrong: not installed, not a bundle, a bundle naming a bundle, a malformed reference', () => {
    const patch = join(home, 'patch.yml')
    writeFileSync(patch, '- bundle: dsh-plugin-missing\n')
    expect(codeOf(() => readUserLayers('home', 'home patch', patch, home))).toMatch(
      /^BUNDLE_NOT_FOUND: bundle "dsh-plugin-missing" not found .*dsh plugin add dsh-plugin-missing/,
    )
    installPackage('left-pad-ish', {}, {})
    writeFileSync(patch, '- bundle: left-pad-ish\n')
    expect(codeOf(() => readUserLayers('home', 'home patch', patch, home))).toMatch(
      /^BUNDLE_INVALID: left-pad-ish is not a dsh bundle: its package.json has no "dsh"/,
    )
    const rows = join(home, 'rows.yml')
    writeFileSync(rows, '- bundle: other\n')
    expect(codeOf(() => readLayer('bundle', 'bundle x', rows))).toMatch(
      /^CONFIG_INVALID: .*names bundle "other", but only a patch may name a bundle/,
    )
    writeFileSync(patch, '- bundle: x\n  use: ./y.mjs\n')
    expect(codeOf(() => readUserLayers('home', 'home patch', patch, home))).toMatch(
      /^CONFIG_INVALID: .*bundles \{ bundle, disabled\?, replaces\? \}:\n {2}- \/0: unknown field "use"; the fields are bundle, disabled, replaces/,
    )
  })
})
