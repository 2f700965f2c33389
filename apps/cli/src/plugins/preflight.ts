// What `dsh plugin add` checks before anything reaches $DSH_HOME: the package is fetched or packed into
// a temporary directory with scripts off and unpacked there, and refused when its name is dsh's own
// (the `@dsh/` scope and the shipped bundles' names: such a package would shadow a shipped bundle in
// every profile), when its bundle or a row's module points outside the package, or when it is not a
// bundle this dsh can load. Only a package that passes is installed.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { checkInsidePackage, checkPluginRows, readLayer } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel'
import { HOST_SCOPE } from './home.js'
import { npm } from './npm.js'

const cliManifest = fileURLToPath(new URL('../../package.json', import.meta.url))
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare']

export interface Candidate {
  name: string
  version: string
  /** The package's tarball, in the staging directory until `keep` moves it. */
  tarball: string
  /** Its install scripts (they run only with --allow-scripts). */
  scripts: string[]
  /** Removes the staging directory. */
  dispose(): void
}

interface Manifest {
  name?: unknown
  version?: unknown
  scripts?: Record<string, unknown>
  dsh?: { bundle?: unknown }
}

/** Names a plugin may not take: dsh's scope and the short names of the bundles this dsh ships. */
export function reservedNames(): { scope: string; bundles: string[] } {
  const manifest = JSON.parse(readFileSync(cliManifest, 'utf8')) as { dependencies?: Record<string, string> }
  const bundles = Object.keys(manifest.dependencies ?? {})
    .filter((name) => name.startsWith(`${HOST_SCOPE}bundle-`))
    .map((name) => name.slice(`${HOST_SCOPE}bundle-`.length))
  return { scope: HOST_SCOPE, bundles }
}

/** Refuses a name dsh ships or reserves (before and after fetching: an alias may hide the real one). */
export function checkName(name: string): void {
  const reserved = reservedNames()
  if (name.startsWith(reserved.scope) || reserved.bundles.includes(name)) {
    throw new HarnessError(
      'PLUGIN_NAME_RESERVED',
      `${name} is a name dsh ships or reserves (the ${reserved.scope} scope and the bundles ${reserved.bundles.join(', ')}); a plugin with it would shadow part of dsh, so nothing was installed. Rename the plugin package.`,
      { name },
    )
  }
}

/** Fetches or packs `target` (a directory, tarball or registry spec) and checks it; nothing in $DSH_HOME changes. */
export async function preflight(target: string, env: NodeJS.ProcessEnv): Promise<Candidate> {
  if (/(^|@)npm:/.test(target)) {
    throw new HarnessError('PLUGIN_INVALID', `${target}: npm aliases are not accepted; name the package itself`, {
      spec: target,
    })
  }
  const staging = mkdtempSync(join(tmpdir(), 'dsh-plugin-add-'))
  const dispose = () => rmSync(staging, { recursive: true, force: true })
  try {
    const tarball = await fetchTarball(target, staging, env)
    const unpacked = join(staging, 'unpacked')
    mkdirSync(unpacked)
    execFileSync('tar', ['-xzf', tarball, '-C', unpacked, '--no-same-owner'], { stdio: 'ignore' })
    const dir = join(unpacked, 'package')
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
    const name = typeof manifest.name === 'string' ? manifest.name : ''
    if (!name) throw new HarnessError('PLUGIN_INVALID', `${target}: its package.json has no name`, { spec: target })
    checkName(name)
    checkInside(name, dir)
    const scripts = INSTALL_SCRIPTS.filter((script) => typeof manifest.scripts?.[script] === 'string')
    return { name, version: String(manifest.version ?? ''), tarball, scripts, dispose }
  } catch (error) {
    dispose()
    throw error
  }
}

/** Copies the checked tarball to `dir` (the home's tarballs) and returns its path there. */
export function keep(candidate: Candidate, dir: string): string {
  mkdirSync(dir, { recursive: true })
  const kept = join(dir, basename(candidate.tarball))
  copyFileSync(candidate.tarball, kept)
  return kept
}

async function fetchTarball(target: string, staging: string, env: NodeJS.ProcessEnv): Promise<string> {
  if (existsSync(target) && statSync(target).isFile()) {
    const copy = join(staging, basename(target))
    copyFileSync(target, copy)
    return copy
  }
  // A directory is packed, a registry spec fetched; `npm` runs it with scripts off: a package's prepack
  // or prepare script is its author's code, and it must not run before the user allowed it.
  const result = await npm(['pack', target, '--pack-destination', staging, '--json'], staging, env)
  if (result.failed) {
    throw new HarnessError(
      'PLUGIN_NOT_FOUND',
      `npm could not fetch or pack ${target}:\n${result.lines.map((line) => `  ${line}`).join('\n')}`,
      { lines: result.lines },
    )
  }
  const [entry] = JSON.parse(result.stdout) as Array<{ filename: string }>
  if (!entry) throw new HarnessError('PLUGIN_INSTALL_FAILED', `npm pack ${target} made no tarball`, { target })
  return join(staging, entry.filename)
}

/** The package must be a bundle whose rows load only its own files and declared dependencies. */
function checkInside(name: string, dir: string): void {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest
  const bundle = manifest.dsh?.bundle
  if (typeof bundle !== 'string') {
    throw new HarnessError(
      'PLUGIN_NOT_A_BUNDLE',
      `${name} is not a dsh bundle: its package.json has no "dsh": { "bundle": "rows.yml" } naming its rows`,
      { name },
    )
  }
  const rowsFile = resolve(dir, bundle)
  checkInsidePackage(name, dir, rowsFile, `its bundle file ${bundle}`)
  checkPluginRows(dir, rowsFile, readLayer('bundle', `bundle ${name}`, rowsFile).rows)
}
