import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
// @ts-expect-error: a plain .mjs script without types
import { renderPackageMap } from '../scripts/package-map.mjs'

it('docs/packages.md is generated from the current package manifests', () => {
  const committed = readFileSync(new URL('../docs/packages.md', import.meta.url), 'utf8')
  expect(committed, 'run node scripts/package-map.mjs').toBe(renderPackageMap())
})
