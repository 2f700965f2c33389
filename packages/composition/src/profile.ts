// $DSH_HOME, profiles and bundles: turns "profile NAME plus --patch files" into the ordered layers.
import { cpSync, existsSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HarnessError } from '@dsh/kernel'
import { isBundleRef, type Layer, type LayerKind, type RowSpec, readLayer, readLayerEntries } from './layers.js'
import { loadYaml } from './lazy.js'
import { cachedParse, parseCacheOf, Uncached } from './parse-cache.js'
import { checkPluginRows } from './plugin-rows.js'

/** `$DSH_HOME`, or `~/.dsh` when unset. */
export function dshHome(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const value = env.DSH_HOME
  return value ? resolve(value) : join(homedir(), '.dsh')
}

export interface ProfileManifest {
  name: string
  dir: string
  /** Bundle references in order; `base` is always first. */
  bundles: string[]
}

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

/** Profile names that ship as templates (subdirectories of `templatesDir`). */
export function listTemplates(templatesDir: string): string[] {
  if (!existsSync(templatesDir)) return []
  return readdirSync(templatesDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
}

/** The YAML of a profile.yml. `parse` prints a document's warnings: such a file is not cached, so they stay. */
export function parseProfileText(text: string): unknown {
  const yaml = loadYaml()
  return yaml.parseDocument(text).warnings.length > 0 ? new Uncached(yaml.parse(text)) : yaml.parse(text)
}

/**
 * Loads `$DSH_HOME/profiles/<name>/profile.yml`, creating the profile from the shipped template of the
 * same name on first use. Throws `PROFILE_NOT_FOUND` (naming the choices) or `PROFILE_INVALID`.
 */
export function loadProfile(home: string, name: string, templatesDir: string): ProfileManifest {
  if (!PROFILE_NAME.test(name)) {
    throw new HarnessError('PROFILE_INVALID', `invalid profile name "${name}" (letters, digits, . _ - only)`, { name })
  }
  const dir = join(home, 'profiles', name)
  const file = join(dir, 'profile.yml')
  if (!existsSync(file)) {
    const template = join(templatesDir, name)
    if (!existsSync(join(template, 'profile.yml'))) {
      const existing = existsSync(join(home, 'profiles')) ? readdirSync(join(home, 'profiles')) : []
      const choices = [...new Set([...listTemplates(templatesDir), ...existing])].sort()
      throw new HarnessError(
        'PROFILE_NOT_FOUND',
        `no profile "${name}" in ${join(home, 'profiles')} and no shipped template of that name; choose one of: ${choices.join(', ')}`,
        { name, choices },
      )
    }
    // Copied aside, then renamed into place: two dsh processes starting at once on a fresh home both
    // copy, one rename wins, and neither sees a half-written profile.
    const staging = `${dir}.${process.pid}.${Date.now()}.tmp`
    cpSync(template, staging, { recursive: true })
    try {
      renameSync(staging, dir)
    } catch (error) {
      rmSync(staging, { recursive: true, force: true })
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'EEXIST' && code !== 'ENOTEMPTY') throw error
    }
  }
  let manifest: unknown
  try {
    const text = readFileSync(file, 'utf8')
    manifest = cachedParse(parseCacheOf(home), 'profile', text, () => parseProfileText(text))
  } catch (error) {
    throw new HarnessError('PROFILE_INVALID', `${file}: ${(error as Error).message.split('\n')[0]}`, { file })
  }
  const bundles = (manifest as { bundles?: unknown } | null)?.bundles
  if (!Array.isArray(bundles) || bundles.some((b) => typeof b !== 'string') || bundles[0] !== 'base') {
    throw new HarnessError(
      'PROFILE_INVALID',
      `${file}: "bundles" must be a list of bundle names that starts with base, e.g. bundles: [base, headless]`,
      { file },
    )
  }
  return { name, dir, bundles: bundles as string[] }
}

/**
 * The directory of package `name` as Node would find it from `fromDir` (walking up its node_modules),
 * read from the directory itself so a package whose `exports` hide `package.json` is found too; the
 * real path (workspace and `file:` links followed).
 */
export function findPackageDir(name: string, fromDir: string): string | undefined {
  const lookup = createRequire(join(fromDir, 'package.json')).resolve.paths(name) ?? []
  for (const modules of lookup) {
    const dir = join(modules, name)
    if (existsSync(join(dir, 'package.json'))) return realpathSync(dir)
  }
  return undefined
}

/**
 * Finds a bundle's rows file. A reference is a path (relative to `fromDir`), a shipped short name
 * (`base` means `@dsh/bundle-base`) or any installed npm package whose package.json has `dsh.bundle`,
 * looked up from `fromDir`, then each of `alsoFrom` (e.g. $DSH_HOME, where `dsh plugin add` installs),
 * then the dsh install.
 */
export function resolveBundle(reference: string, fromDir: string, alsoFrom: string[] = []): string {
  if (reference.startsWith('.') || isAbsolute(reference)) {
    const path = resolve(fromDir, reference)
    return path.endsWith('.yml') || path.endsWith('.yaml') ? path : bundleFileOf(join(path, 'package.json'))
  }
  const candidates = reference.includes('/') ? [reference] : [`@dsh/bundle-${reference}`, reference]
  const install = dirname(fileURLToPath(import.meta.url))
  for (const candidate of candidates) {
    // dsh's own scope resolves from the dsh install first: a `@dsh/` package left in $DSH_HOME (or
    // beside a patch) never shadows a shipped bundle.
    const dirs = candidate.startsWith('@dsh/') ? [install, fromDir, ...alsoFrom] : [fromDir, ...alsoFrom, install]
    for (const dir of dirs) {
      const found = findPackageDir(candidate, dir)
      if (found) return bundleFileOf(join(found, 'package.json'))
    }
  }
  throw new HarnessError(
    'BUNDLE_NOT_FOUND',
    `bundle "${reference}" not found (looked for ${candidates.join(' and ')} from ${[fromDir, ...alsoFrom].join(', ')} and the dsh install); install it with \`dsh plugin add ${reference}\` (or npm) or fix the name`,
    { reference },
  )
}

function bundleFileOf(packageJson: string): string {
  let manifest: { name?: string; dsh?: { bundle?: unknown } }
  try {
    manifest = JSON.parse(readFileSync(packageJson, 'utf8'))
  } catch {
    throw new HarnessError('BUNDLE_NOT_FOUND', `no readable package.json at ${packageJson}`, { packageJson })
  }
  const rows = manifest.dsh?.bundle
  if (typeof rows !== 'string') {
    throw new HarnessError(
      'BUNDLE_INVALID',
      `${manifest.name ?? packageJson} is not a dsh bundle: its package.json has no "dsh": { "bundle": "<rows file>" } field (${packageJson})`,
      { packageJson },
    )
  }
  return join(dirname(packageJson), rows)
}

/**
 * A user layer file as layers: its rows, with each bundle it names (`- bundle: NAME`) spliced in at
 * that point as a layer of its own, so the bundle's rows resolve from its package and later rows of
 * the same file can patch them. A disabled reference leaves the bundle out (it need not be installed).
 */
export function readUserLayers(kind: LayerKind, label: string, file: string, home: string): Layer[] {
  const layers: Layer[] = []
  const cache = parseCacheOf(home)
  let rows: RowSpec[] = []
  const flush = () => {
    if (rows.length > 0) layers.push({ kind, label, file, rows })
    rows = []
  }
  for (const entry of readLayerEntries(label, file, cache)) {
    if (!isBundleRef(entry)) {
      rows.push(entry)
      continue
    }
    if (entry.disabled === true) continue
    flush()
    const rowsFile = resolveBundle(entry.bundle, dirname(file), [home])
    const layer = readLayer('bundle', `bundle ${entry.bundle} (named by ${label})`, rowsFile, cache)
    const owner = bundlePackage(rowsFile)
    if (owner?.name.startsWith('@dsh/')) {
      layers.push(layer)
      continue
    }
    // A plugin's rows are checked each time they are read: its files may have changed since install.
    if (owner) checkPluginRows(owner.dir, rowsFile, layer.rows)
    layers.push({ ...layer, plugin: { replaces: entry.replaces ?? [] } })
  }
  flush()
  // An empty patch still shows in the provenance header, as before bundles could be named.
  if (layers.length === 0) layers.push({ kind, label, file, rows: [] })
  return layers
}

export interface LayerOptions {
  home: string
  profile: ProfileManifest
  /** `--patch FILE` arguments, in order, relative to `cwd`. */
  patches?: string[]
  /** Rows the launcher adds last (e.g. the launcher service itself). */
  launcherRows?: RowSpec[]
  cwd?: string
  /** Only the bundles (`--dump-default-config`). */
  defaultsOnly?: boolean
}

/** The package a bundle's rows file belongs to (its nearest package.json); `@dsh/` names are shipped. */
function bundlePackage(rowsFile: string): { dir: string; name: string } | undefined {
  for (let dir = dirname(rowsFile); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json')
    if (!existsSync(manifest)) continue
    try {
      return { dir, name: String((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name) }
    } catch {
      return undefined
    }
  }
  return undefined
}

/**
 * A plugin bundle (named by a patch, not shipped) may replace a row of the profile's shipped bundles
 * only where the user confirmed it (`replaces:` on its patch entry, written by `dsh plugin add
 * --allow-replace`): otherwise a plugin could swap the sandbox policy for its own without a word.
 */
function checkReplacements(layers: readonly Layer[]): void {
  const shipped = new Set(
    layers
      .filter((layer) => layer.kind === 'bundle' && !layer.plugin)
      .flatMap((layer) => layer.rows.map((row) => row.id)),
  )
  for (const layer of layers) {
    if (!layer.plugin) continue
    const unconfirmed = layer.rows
      .map((row) => row.id)
      .filter((id) => shipped.has(id) && !layer.plugin?.replaces.includes(id))
    if (unconfirmed.length === 0) continue
    const name = layer.label.replace(/^bundle (\S+).*$/, '$1')
    throw new HarnessError(
      'PLUGIN_REPLACES_SHIPPED',
      `${layer.label} replaces the shipped row${unconfirmed.length > 1 ? 's' : ''} ${unconfirmed.join(', ')} without your confirmation; if you mean it, run \`dsh plugin add --allow-replace ${name}\` (or add \`replaces: [${unconfirmed.join(', ')}]\` to its patch entry), else \`dsh plugin rm ${name}\``,
      { bundle: name, rows: unconfirmed },
    )
  }
}

/** The ordered layers for a profile: bundles, profile patch, home patch, each --patch, launcher rows. */
export function profileLayers(options: LayerOptions): Layer[] {
  const { home, profile, cwd = process.cwd() } = options
  const cache = parseCacheOf(home)
  const layers: Layer[] = profile.bundles.map((reference) =>
    readLayer('bundle', `bundle ${reference}`, resolveBundle(reference, profile.dir, [home]), cache),
  )
  if (options.defaultsOnly) return layers
  const profilePatch = join(profile.dir, 'patch.yml')
  if (existsSync(profilePatch))
    layers.push(...readUserLayers('profile', `profile ${profile.name} patch`, profilePatch, home))
  const homePatch = join(home, 'patch.yml')
  if (existsSync(homePatch)) layers.push(...readUserLayers('home', 'home patch', homePatch, home))
  for (const patch of options.patches ?? []) {
    layers.push(...readUserLayers('patch', `--patch ${patch}`, resolve(cwd, patch), home))
  }
  if (options.launcherRows?.length) layers.push({ kind: 'launcher', label: 'launcher', rows: options.launcherRows })
  checkReplacements(layers)
  return layers
}

/**
 * The user-editable patch files of a profile, whether or not they exist yet (what `--watch-config`
 * watches): the profile patch, the home patch, and each `--patch` file.
 */
export function userPatchFiles(options: Pick<LayerOptions, 'home' | 'profile' | 'patches' | 'cwd'>): string[] {
  const cwd = options.cwd ?? process.cwd()
  return [
    join(options.profile.dir, 'patch.yml'),
    join(options.home, 'patch.yml'),
    ...(options.patches ?? []).map((patch) => resolve(cwd, patch)),
  ]
}
