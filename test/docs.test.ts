import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
// @ts-expect-error: a plain .mjs script without types
import { renderPackageMap } from '../scripts/package-map.mjs'

it('docs/packages.md is generated from the current package manifests', () => {
  const committed = readFileSync(new URL('../docs/packages.md', import.meta.url), 'utf8')
  expect(committed, 'run node scripts/package-map.mjs').toBe(renderPackageMap())
})

it('the build-time validators are generated from their current schemas', async () => {
  // @ts-expect-error: a plain .mjs script without types
  const { VALIDATORS, renderValidator } = await import('../scripts/validators.mjs')
  for (const validator of VALIDATORS as Array<{ out: string }>) {
    const committed = readFileSync(new URL(`../${validator.out}`, import.meta.url), 'utf8')
    expect(committed, 'run node scripts/validators.mjs').toBe(renderValidator(validator))
  }
})
