// What a plugin bundle's rows may load: its own files and the packages it declares. A row of a plugin
// that names a file outside its package, a `file:`/`data:` URL, or a package it does not depend on
// would run code the user never installed (another plugin's, or a checkout's node_modules), so the
// check runs when `dsh plugin add` stages the package and again each time a profile reads the bundle.
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import type { RowSpec } from './layers.js'

interface PluginManifest {
  name?: unknown
  dependencies?: Record<string, unknown>
  peerDependencies?: Record<string, unknown>
  optionalDependencies?: Record<string, unknown>
}

/** The package a bare specifier names: `a`, `a/sub` -> `a`; `@s/a/sub` -> `@s/a`. */
export function specifierPackage(use: string): string {
  const parts = use.split('/')
  return use.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string)
}

/**
 * Throws unless every `use` of `rows` (read from `rowsFile` inside the package at `packageDir`) stays
 * within the package, its declared dependencies, or dsh's own `@dsh/` modules.
 */
export function checkPluginRows(packageDir: string, rowsFile: string, rows: readonly RowSpec[]): void {
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as PluginManifest
  const name = typeof manifest.name === 'string' ? manifest.name : packageDir
  const declared = new Set([
    name,
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}),
    ...Object.keys(manifest.optionalDependencies ?? {}),
  ])
  inside(name, packageDir, rowsFile, 'its bundle file')
  for (const row of rows) {
    if (typeof row.use !== 'string') continue
    const what = `row "${row.id}"`
    if (/^[a-z][a-z0-9+.-]*:/i.test(row.use)) {
      throw escapes(name, `${what} uses ${row.use}, a URL; a row names a file of the package or a package`)
    }
    if (isAbsolute(row.use)) throw escapes(name, `${what} uses ${row.use}, an absolute path`)
    if (row.use.startsWith('.')) {
      inside(name, packageDir, resolve(dirname(rowsFile), row.use), `${what}'s module ${row.use}`)
      continue
    }
    const dependency = specifierPackage(row.use)
    if (!dependency.startsWith('@dsh/') && !declared.has(dependency)) {
      throw new HarnessError(
        'PLUGIN_UNDECLARED_MODULE',
        `${name}: ${what} uses ${row.use}, but ${dependency} is not among the package's dependencies; add it to "dependencies" so it is installed with the plugin (nothing else is loaded in its name)`,
        { name, row: row.id, use: row.use },
      )
    }
  }
}

/** Throws `PLUGIN_PATH_ESCAPE` unless `full` (links followed) lies inside the package at `dir`. */
export function inside(name: string, dir: string, full: string, what: string): void {
  const root = realpathSync(dir)
  const real = existsSync(full) ? realpathSync(full) : full
  for (const candidate of [resolve(root, relative(dir, full)), real]) {
    const rel = relative(root, candidate)
    if (rel.startsWith('..') || isAbsolute(rel)) throw escapes(name, `${what} resolves outside the package`)
  }
}

function escapes(name: string, detail: string): HarnessError {
  return new HarnessError(
    'PLUGIN_PATH_ESCAPE',
    `${name}: ${detail}; a plugin may load only its own files and its dependencies, so it is not loaded`,
    { name },
  )
}
