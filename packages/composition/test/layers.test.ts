import { HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { applyLayers, ConfigExpr, dumpTree, type Layer, parseLayerText } from '../src/index.js'

const layer = (kind: Layer['kind'], label: string, text: string): Layer => ({
  kind,
  label,
  rows: parseLayerText(text, label),
})

const base = layer(
  'bundle',
  'bundle base',
  `
- id: alpha
  use: '@x/alpha'
  config: { a: 1, b: 2 }
- id: beta
  use: '@x/beta'
`,
)

describe('applyLayers', () => {
  it('applies layers in order: later layers win and provenance lists every patcher', () => {
    const tree = applyLayers(
      [
        base,
        layer('profile', 'profile p patch', '- id: alpha\n  config: { a: 10 }'),
        layer('home', 'home patch', '- id: alpha\n  config: { a: 20 }'),
        layer('patch', '--patch x.yml', '- id: alpha\n  config: { a: 30 }'),
      ],
      '/',
    )
    const alpha = tree.rows.find((row) => row.id === 'alpha')
    expect(alpha).toMatchObject({
      use: '@x/alpha',
      config: { a: 30 },
      origin: 'bundle base',
      patchedBy: ['profile p patch', 'home patch', '--patch x.yml'],
    })
  })

  it('replaces the whole row: a patch that sets one field drops the others', () => {
    const tree = applyLayers([base, layer('profile', 'profile', '- id: alpha\n  config: { b: 5 }')], '/')
    expect(tree.rows[0]?.config).toEqual({ b: 5 })
  })

  it('drops the config entirely when the patch row has none', () => {
    const tree = applyLayers([base, layer('profile', 'profile', "- id: alpha\n  use: '@y/alpha'")], '/')
    expect(tree.rows[0]).toMatchObject({ id: 'alpha', use: '@y/alpha', config: undefined })
  })

  it('inserts rows with new ids after the existing ones', () => {
    const tree = applyLayers([base, layer('patch', '--patch p', "- id: gamma\n  use: '@x/gamma'")], '/')
    expect(tree.rows.map((row) => [row.id, row.origin])).toEqual([
      ['alpha', 'bundle base'],
      ['beta', 'bundle base'],
      ['gamma', '--patch p'],
    ])
  })

  it('disables a row and can enable it again in a later layer', () => {
    const disabled = applyLayers([base, layer('home', 'home', '- id: beta\n  disabled: true')], '/')
    expect(disabled.rows[1]).toMatchObject({ id: 'beta', disabled: true, use: '@x/beta' })
    const enabled = applyLayers(
      [
        base,
        layer('home', 'home', '- id: beta\n  disabled: true'),
        layer('patch', 'p', '- id: beta\n  disabled: false'),
      ],
      '/',
    )
    expect(enabled.rows[1]).toMatchObject({ id: 'beta', disabled: false })
  })

  it('warns when a patch names an unknown id and ignores that row', () => {
    const tree = applyLayers([base, layer('patch', '--patch typo.yml', '- id: alhpa\n  config: { a: 1 }')], '/')
    expect(tree.rows.map((row) => row.id)).toEqual(['alpha', 'beta'])
    expect(tree.warnings).toEqual([
      '--patch typo.yml: patch names unknown row id "alhpa" (did you mean "alpha"?) (no earlier layer inserted it; add "use" to insert a new row); ignored',
    ])
  })

  it('keeps expressions in the tree and prints them back as tags', () => {
    const tree = applyLayers(
      [
        layer(
          'bundle',
          'b',
          "- id: e\n  use: '@x/e'\n  config: { key: !env API_KEY:none }\n  disabled: !platform win32",
        ),
      ],
      '/',
    )
    expect(tree.rows[0]?.config).toEqual({ key: new ConfigExpr('env', 'API_KEY:none') })
    const dump = dumpTree(tree)
    expect(dump).toContain('key: !env API_KEY:none')
    expect(dump).toContain('disabled: !platform win32')
  })

  it('dumps expressions that plain YAML would misread so that they parse back', () => {
    const text = `- id: e\n  use: '@x/e'\n  config: { dir: !env "DIR:", url: !env "URL:http://x:1/a b", n: !env "N:#1" }`
    const tree = applyLayers([layer('bundle', 'b', text)], '/')
    const again = parseLayerText(dumpTree(tree), 'dump')
    expect(again[0]?.config).toEqual({
      dir: new ConfigExpr('env', 'DIR:'),
      url: new ConfigExpr('env', 'URL:http://x:1/a b'),
      n: new ConfigExpr('env', 'N:#1'),
    })
  })
})

describe('layer files', () => {
  const codeOf = (run: () => unknown): string | undefined => {
    try {
      run()
    } catch (error) {
      return HarnessError.is(error) ? `${error.code}: ${error.message}` : String(error)
    }
    return undefined
  }

  it('rejects rows with unknown keys, bad ids, and duplicate ids, naming the file', () => {
    expect(codeOf(() => parseLayerText('- id: a\n  use: x\n  confg: {}', 'f.yml'))).toMatch(
      /^CONFIG_INVALID: f.yml: .*\n {2}- row 1 \(id a\): unknown field "confg" \(did you mean "config"\?\); a row is \{ id, use\?, config\?, disabled\? \}$/,
    )
    expect(codeOf(() => parseLayerText('- id: a\n  disabeld: true', 'f.yml'))).toContain(
      'row 1 (id a): unknown field "disabeld" (did you mean "disabled"?)',
    )
    expect(codeOf(() => parseLayerText('- id: a\n  use: 3', 'f.yml'))).toContain(
      'row 1 (id a), field use: must be string (expected a module specifier',
    )
    expect(codeOf(() => parseLayerText('- use: x', 'f.yml'))).toContain('row 1: missing field "id"')
    expect(codeOf(() => parseLayerText('rows: []', 'f.yml'))).toContain('the file must be a YAML list of rows')
    expect(codeOf(() => parseLayerText('- id: "bad id"\n  use: x', 'f.yml'))).toMatch(/CONFIG_INVALID.*pattern/s)
    expect(codeOf(() => parseLayerText('- id: a\n  use: x\n- id: a\n  use: y', 'f.yml'))).toMatch(
      /CONFIG_INVALID: f.yml: row id "a" appears twice/,
    )
    expect(codeOf(() => parseLayerText('id: a', 'f.yml'))).toMatch(/CONFIG_INVALID: f.yml: not a list of rows/)
  })

  it('rejects malformed YAML and unknown platforms with the reason', () => {
    expect(codeOf(() => parseLayerText('- id: a\n  use: [unclosed', 'f.yml'))).toMatch(
      /CONFIG_INVALID: f.yml: invalid YAML/,
    )
    expect(codeOf(() => parseLayerText('- id: a\n  use: x\n  disabled: !platform plan9', 'f.yml'))).toMatch(
      /unknown platform\(s\) plan9/,
    )
  })

  it('reads an empty or comment-only file as an empty layer', () => {
    expect(parseLayerText('', 'f.yml')).toEqual([])
    expect(parseLayerText('# nothing here\n', 'f.yml')).toEqual([])
  })
})
