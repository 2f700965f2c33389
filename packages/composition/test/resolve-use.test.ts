// A row's bare `use` resolves from the layer's own package and from dsh's, never from the working
// directory: a cloned repository's node_modules must not supply the module a user's patch names.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { resolveUse } from '../src/runtime.js'

let dir: string
let cwd: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-resolve-use-'))
  cwd = process.cwd()
})
afterEach(() => {
  process.chdir(cwd)
  rmSync(dir, { recursive: true, force: true })
})

it('does not resolve a bare module from a checkout in the working directory', () => {
  const checkout = join(dir, 'checkout')
  const planted = join(checkout, 'node_modules', 'dsh-row-implant')
  mkdirSync(planted, { recursive: true })
  writeFileSync(join(checkout, 'package.json'), '{"name":"checkout"}')
  writeFileSync(join(planted, 'package.json'), '{"name":"dsh-row-implant","main":"index.js"}')
  writeFileSync(join(planted, 'index.js'), 'module.exports = {}')
  process.chdir(checkout)
  const patchDir = join(dir, 'home')
  mkdirSync(patchDir)
  expect(() => resolveUse('dsh-row-implant', patchDir)).toThrow(/cannot resolve module "dsh-row-implant"/)
  // The layer's own folder still resolves it (a plugin's declared dependency lives beside it).
  expect(resolveUse('dsh-row-implant', checkout)).toBe(pathToFileURL(join(planted, 'index.js')).href)
})
