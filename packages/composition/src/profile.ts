// $DSH_HOME, profiles and bundles: turns "profile NAME plus --patch files" into the ordered layers.
import { cpSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import { type Layer, type RowSpec, readLayer } from './layers.js'
import { loadYaml } from './lazy.js'

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
    cpSync(template, dir, { recursive: true, errorOnExist: false, force: false })
  }
  let manifest: unknown
  try {
    manifest = loadYaml().parse(readFileSync(file, 'utf8'))
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
 * Finds a bundle's rows file. A reference is a path (relative to the profile), a shipped short name
 * (`base` means `@dsh/bundle-base`) or any installed npm package whose package.json has `dsh.bundle`.
 */
export function resolveBundle(reference: string, profileDir: string): string {
  if (reference.startsWith('.') || isAbsolute(reference)) {
    const path = resolve(profileDir, reference)
    return path.endsWith('.yml') || path.endsWith('.yaml') ? path : bundleFileOf(join(path, 'package.json'))
  }
  const candidates = reference.includes('/') ? [reference] : [`@dsh/bundle-${reference}`, reference]
  const requirers = [createRequire(join(profileDir, 'package.json')), createRequire(import.meta.url)]
  for (const candidate of candidates) {
    for (const require of requirers) {
      try {
        return bundleFileOf(require.resolve(`${candidate}/package.json`))
      } catch (error) {
        if (HarnessError.is(error)) throw error
      }
    }
  }
  throw new HarnessError(
    'BUNDLE_NOT_FOUND',
    `bundle "${reference}" not found (looked for ${candidates.join(' and ')} from ${profileDir} and the dsh install); install it with npm or fix the profile's bundles list`,
    { reference },
  )
}

function bundleFileOf(packageJson: string): string {
  let manifest: { dsh?: { bundle?: unknown } }
  try {
    manifest = JSON.parse(readFileSync(packageJson, 'utf8'))
  } catch {
    throw new HarnessError('BUNDLE_NOT_FOUND', `no readable package.json at ${packageJson}`, { packageJson })
  }
  const rows = manifest.dsh?.bundle
  if (typeof rows !== 'string') {
    throw new HarnessError('BUNDLE_INVALID', `${packageJson} has no "dsh": { "bundle": "<rows file>" } field`, {
      packageJson,
    })
  }
  return join(dirname(packageJson), rows)
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

/** The ordered layers for a profile: bundles, profile patch, home patch, each --patch, launcher rows. */
export function profileLayers(options: LayerOptions): Layer[] {
  const { home, profile, cwd = process.cwd() } = options
  const layers: Layer[] = profile.bundles.map((reference) =>
    readLayer('bundle', `bundle ${reference}`, resolveBundle(reference, profile.dir)),
  )
  if (options.defaultsOnly) return layers
  const profilePatch = join(profile.dir, 'patch.yml')
  if (existsSync(profilePatch)) layers.push(readLayer('profile', `profile ${profile.name} patch`, profilePatch))
  const homePatch = join(home, 'patch.yml')
  if (existsSync(homePatch)) layers.push(readLayer('home', 'home patch', homePatch))
  for (const patch of options.patches ?? []) {
    layers.push(readLayer('patch', `--patch ${patch}`, resolve(cwd, patch)))
  }
  if (options.launcherRows?.length) layers.push({ kind: 'launcher', label: 'launcher', rows: options.launcherRows })
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
