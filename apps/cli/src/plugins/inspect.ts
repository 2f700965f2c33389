// What makes an installed package a plugin this dsh can load: a bundle (`dsh.bundle` naming a rows
// file with at least one row, each `use` resolvable from the package), and `@dsh/*` imports declared
// as peer dependencies whose ranges this dsh's version satisfies. Each check fails with the fix.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { findPackageDir, type RowSpec, readLayer, resolveBundle, resolveUse } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel'
import semver from 'semver'
import { HOST_SCOPE, hostPackageDir } from './home.js'

export interface PluginInfo {
  name: string
  version: string
  dir: string
  rows: RowSpec[]
  /** `@dsh/*` peer dependencies: name -> range. */
  peers: Record<string, string>
}

interface Manifest {
  name: string
  version: string
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
}

/** Reads the plugin `name` installed under `home`. Throws `PLUGIN_NOT_INSTALLED`, `PLUGIN_NOT_A_BUNDLE`, `PLUGIN_INVALID`. */
export function inspectPlugin(home: string, name: string): PluginInfo {
  const dir = findPackageDir(name, home)
  if (!dir) {
    throw new HarnessError('PLUGIN_NOT_INSTALLED', `${name} is not installed in ${home} (dsh plugin add ${name})`, {
      name,
    })
  }
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
  let rowsFile: string
  try {
    rowsFile = resolveBundle(dir, home)
  } catch (error) {
    if (HarnessError.is(error) && error.code === 'BUNDLE_INVALID') {
      throw new HarnessError(
        'PLUGIN_NOT_A_BUNDLE',
        `${name} is not a dsh bundle: its package.json has no "dsh": { "bundle": "rows.yml" } naming its rows`,
        { name },
      )
    }
    throw error
  }
  const rows = readLayer('bundle', `bundle ${name}`, rowsFile).rows
  if (rows.length === 0) {
    throw new HarnessError('PLUGIN_NOT_A_BUNDLE', `${name} is not a dsh bundle: ${rowsFile} has no rows`, { name })
  }
  for (const row of rows) {
    if (row.use === undefined) {
      throw new HarnessError('PLUGIN_INVALID', `${name}: row "${row.id}" of ${rowsFile} has no "use"`, { name })
    }
    resolveUse(row.use, dir)
  }
  const bundled = Object.keys(manifest.dependencies ?? {}).filter((dep) => dep.startsWith(HOST_SCOPE))
  if (bundled.length > 0) {
    throw new HarnessError(
      'PLUGIN_INVALID',
      `${name} lists ${bundled.join(', ')} under "dependencies"; a plugin must declare @dsh/* packages as "peerDependencies", so that it runs on the dsh that loads it (ask its author, or fix its package.json)`,
      { name, packages: bundled },
    )
  }
  const peers = Object.fromEntries(
    Object.entries(manifest.peerDependencies ?? {}).filter(([dep]) => dep.startsWith(HOST_SCOPE)),
  )
  return { name: manifest.name, version: manifest.version, dir, rows, peers }
}

/**
 * The host package each `@dsh/*` peer links to. Throws `PLUGIN_PEER_MISMATCH` naming every peer this
 * dsh cannot satisfy (absent, or a version outside the plugin's range).
 */
export function hostLinksFor(plugin: PluginInfo, version: string): Map<string, string> {
  const links = new Map<string, string>()
  const problems: string[] = []
  for (const [peer, range] of Object.entries(plugin.peers)) {
    const dir = hostPackageDir(peer)
    if (!dir) problems.push(`${peer}@${range} (this dsh has no ${peer})`)
    else if (!semver.satisfies(version, range, { includePrerelease: true })) problems.push(`${peer}@${range}`)
    else links.set(peer, dir)
  }
  if (problems.length > 0) {
    throw new HarnessError(
      'PLUGIN_PEER_MISMATCH',
      `${plugin.name}@${plugin.version} needs ${problems.join(', ')}, but this dsh is ${version}: install a version of ${plugin.name} made for dsh ${version}, or a dsh that matches`,
      { name: plugin.name, version, problems },
    )
  }
  return links
}
