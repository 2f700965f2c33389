// The plugin directory: $DSH_HOME as a small npm project. Its package.json lists the installed plugins
// and, as `file:` links, the `@dsh/*` packages of the dsh install they peer on: Node resolves a
// plugin's `import '@dsh/agent/tools'` by walking up to $DSH_HOME/node_modules, where the link points at the
// very package the host loaded, so plugin and host share one copy (decision 310).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findPackageDir } from '@dsh/composition'

export const HOST_SCOPE = '@dsh/'

interface HomeManifest {
  name?: string
  private?: boolean
  description?: string
  dependencies?: Record<string, string>
  [key: string]: unknown
}

const cliDir = fileURLToPath(new URL('../..', import.meta.url))

const manifestFile = (home: string) => join(home, 'package.json')

function readManifest(home: string): HomeManifest {
  const file = manifestFile(home)
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as HomeManifest) : {}
}

/** Makes $DSH_HOME an npm project if it is not one yet; `.npmrc` keeps a hand-run `npm install` from fetching peers. */
export function ensurePluginHome(home: string): void {
  mkdirSync(home, { recursive: true })
  if (!existsSync(manifestFile(home))) {
    const manifest: HomeManifest = {
      name: 'dsh-home',
      private: true,
      description: 'dsh plugins (dsh plugin add/rm); the @dsh/* entries link to the dsh install they run in',
      dependencies: {},
    }
    writeFileSync(manifestFile(home), `${JSON.stringify(manifest, null, 2)}\n`)
  }
  const npmrc = join(home, '.npmrc')
  if (!existsSync(npmrc))
    writeFileSync(npmrc, '# dsh links its own @dsh/* packages; never install peers\nlegacy-peer-deps=true\n')
}

/** The dependencies of $DSH_HOME/package.json. */
export function homeDependencies(home: string): Record<string, string> {
  return { ...(readManifest(home).dependencies ?? {}) }
}

/** The installed plugins: every dependency that is not one of dsh's own links. */
export function installedPlugins(home: string): string[] {
  return Object.keys(homeDependencies(home))
    .filter((name) => !name.startsWith(HOST_SCOPE))
    .sort()
}

/** The directory of a package of the running dsh install (`@dsh/agent/tools`), or undefined. */
export function hostPackageDir(name: string): string | undefined {
  return findPackageDir(name, cliDir)
}

/** The version of the running dsh (every `@dsh/*` package has it). */
export function hostVersion(): string {
  return (JSON.parse(readFileSync(join(cliDir, 'package.json'), 'utf8')) as { version: string }).version
}

/** Drops `name` from $DSH_HOME/package.json (the next `npm install` prunes it from node_modules). */
export function dropDependency(home: string, name: string): void {
  const manifest = readManifest(home)
  if (!manifest.dependencies?.[name]) return
  delete manifest.dependencies[name]
  writeFileSync(manifestFile(home), `${JSON.stringify(manifest, null, 2)}\n`)
}

/**
 * Makes the `@dsh/*` links of $DSH_HOME/package.json exactly `links` (name -> host directory).
 * Returns whether the file changed (then `npm install` must run to make node_modules match).
 */
export function writeHostLinks(home: string, links: ReadonlyMap<string, string>): boolean {
  const manifest = readManifest(home)
  const dependencies = manifest.dependencies ?? {}
  const next: Record<string, string> = {}
  for (const [name, spec] of Object.entries(dependencies)) if (!name.startsWith(HOST_SCOPE)) next[name] = spec
  for (const [name, dir] of [...links].sort(([a], [b]) => a.localeCompare(b))) next[name] = `file:${dir}`
  // npm rewrites `file:` specs relative to $DSH_HOME when it saves: compare the directories they name.
  const target = (spec: string | undefined) =>
    spec?.startsWith('file:') ? resolve(home, spec.slice('file:'.length)) : spec
  const keys = new Set([...Object.keys(next), ...Object.keys(dependencies)])
  if ([...keys].every((name) => target(next[name]) === target(dependencies[name]))) return false
  manifest.dependencies = next
  writeFileSync(manifestFile(home), `${JSON.stringify(manifest, null, 2)}\n`)
  return true
}
