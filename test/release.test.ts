import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
// @ts-expect-error: a plain .mjs script without types
import { bumpVersion, checkPackages } from '../scripts/release.mjs'

const root = new URL('..', import.meta.url).pathname

it('every workspace package is publishable at the one version (node scripts/release.mjs fix)', () => {
  expect(checkPackages(root)).toEqual([])
})

/** A two-package workspace: a library and a bundle whose rows use it. */
function tinyWorkspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-release-'))
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'x', private: true, version: '1.0.0', license: 'MIT', engines: { node: '>=20' } }),
  )
  mkdirSync(join(dir, 'packages', 'lib'), { recursive: true })
  writeFileSync(join(dir, 'packages', 'lib', 'README.md'), '# lib\n')
  writeFileSync(
    join(dir, 'packages', 'lib', 'package.json'),
    JSON.stringify({ name: '@dsh/lib', version: '1.0.0', private: true, files: ['index.js'] }),
  )
  mkdirSync(join(dir, 'bundles', 'b'), { recursive: true })
  writeFileSync(join(dir, 'bundles', 'b', 'rows.yml'), '- id: lib\n  use: "@dsh/lib/thing"\n')
  writeFileSync(
    join(dir, 'bundles', 'b', 'package.json'),
    JSON.stringify({
      name: '@dsh/bundle-b',
      description: 'dsh bundle: b',
      version: '0.9.0',
      files: ['rows.yml'],
      dsh: { bundle: 'rows.yml' },
    }),
  )
  mkdirSync(join(dir, 'python'))
  writeFileSync(join(dir, 'python', 'pyproject.toml'), '[project]\nname = "c"\nversion = "1.0.0"\n')
  writeFileSync(join(dir, 'CHANGELOG.md'), '# Changelog\n\n## Unreleased\n\n- a change\n')
  mkdirSync(join(dir, 'examples', 'plugin'), { recursive: true })
  writeFileSync(
    join(dir, 'examples', 'plugin', 'package.json'),
    JSON.stringify({ name: 'a-plugin', version: '3.0.0', peerDependencies: { '@dsh/lib': '^1.0.0', other: '2' } }),
  )
  return dir
}

it('check names each unpublishable package and the fix for it', () => {
  const problems: string[] = checkPackages(tinyWorkspace())
  expect(problems).toContain('packages/lib: is private (run node scripts/release.mjs fix)')
  expect(problems).toContain(
    'bundles/b: version 0.9.0 is not the workspace version 1.0.0 (run node scripts/release.mjs fix)',
  )
  expect(problems).toContain(
    'bundles/b: its rows use @dsh/lib but it does not depend on it (run node scripts/release.mjs fix)',
  )
})

it('bump sets the version everywhere, pins internal dependencies and dates the changelog', () => {
  const dir = tinyWorkspace()
  expect(bumpVersion('1.1.0', dir, '2026-12-02')).toEqual([])
  const bundle = JSON.parse(readFileSync(join(dir, 'bundles', 'b', 'package.json'), 'utf8'))
  expect(bundle.version).toBe('1.1.0')
  expect(bundle.dependencies).toEqual({ '@dsh/lib': '1.1.0' })
  expect(JSON.parse(readFileSync(join(dir, 'packages', 'lib', 'package.json'), 'utf8')).private).toBeUndefined()
  expect(readFileSync(join(dir, 'CHANGELOG.md'), 'utf8')).toContain(
    '## Unreleased\n\n## 1.1.0 (2026-12-02)\n\n- a change',
  )
  expect(readFileSync(join(dir, 'python', 'pyproject.toml'), 'utf8')).toContain('version = "1.1.0"')
  // An example plugin is not a workspace: its version stays, its @dsh peer range follows.
  expect(JSON.parse(readFileSync(join(dir, 'examples', 'plugin', 'package.json'), 'utf8'))).toMatchObject({
    version: '3.0.0',
    peerDependencies: { '@dsh/lib': '^1.1.0', other: '2' },
  })
  expect(() => bumpVersion('one', dir)).toThrow(/not a semver version/)
})

it('an internal dependency pinned to another version is reported', () => {
  const dir = tinyWorkspace()
  bumpVersion('2.0.0', dir)
  const file = join(dir, 'bundles', 'b', 'package.json')
  const bundle = JSON.parse(readFileSync(file, 'utf8'))
  bundle.dependencies['@dsh/lib'] = '1.9.0'
  writeFileSync(file, JSON.stringify(bundle))
  expect(checkPackages(dir)).toEqual(['bundles/b: dependencies pins @dsh/lib@1.9.0, not the workspace version 2.0.0'])
})
