// `dsh plugin add|ls|rm`: out-of-tree plugins. A plugin is an npm package that is a dsh bundle; `add`
// installs it into $DSH_HOME with npm, checks it, links the `@dsh/*` packages it peers on to this dsh
// install, and names it in $DSH_HOME/patch.yml (`- bundle: NAME`), which every profile applies;
// `rm` undoes both. Decision 310.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { dshHome, readLayer, resolveBundle } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { dropDependency, ensurePluginHome, hostVersion, installedPlugins, writeHostLinks } from '../plugins/home.js'
import { hostLinksFor, inspectPlugin } from '../plugins/inspect.js'
import { type NpmFailure, npm } from '../plugins/npm.js'
import { addBundle, namedBundles, removeBundle } from '../plugins/patch-file.js'
import { checkName, keep, preflight, reservedNames } from '../plugins/preflight.js'

const cliDir = fileURLToPath(new URL('../..', import.meta.url))

interface Place {
  home: string
  patch: string
  env: NodeJS.ProcessEnv
}

function placeOf(request: ComposeRequest): Place {
  const env = { ...process.env, ...request.env } as NodeJS.ProcessEnv
  const home = dshHome(env)
  return { home, patch: join(home, 'patch.yml'), env }
}

/** A spec npm reads from disk (a tarball or a directory), made absolute: npm runs in $DSH_HOME. */
function absoluteSpec(spec: string, cwd: string): string {
  const local = spec.startsWith('.') || isAbsolute(spec) || spec.startsWith('file:') || /\.(tgz|tar\.gz)$/.test(spec)
  if (!local) return spec
  const path = resolve(cwd, spec.replace(/^file:/, ''))
  if (!existsSync(path)) {
    throw new HarnessError(
      'PLUGIN_NOT_FOUND',
      `no such file or directory: ${path} (give a tarball, a package directory or a package name)`,
      {
        spec,
      },
    )
  }
  return path
}

/** The package name of a registry spec (`name`, `name@1.2`, `@scope/name@^1`). */
function registryName(spec: string): string {
  const at = spec.indexOf('@', 1)
  return at === -1 ? spec : spec.slice(0, at)
}

function npmError(code: string, what: string, failure: NpmFailure): HarnessError {
  return new HarnessError(code, `${what}:\n${failure.lines.map((line) => `  ${line}`).join('\n')}`, {
    lines: failure.lines,
  })
}

/** The host links every installed plugin needs; a plugin that no longer checks out keeps none. */
function wantedLinks(home: string, version: string): Map<string, string> {
  const links = new Map<string, string>()
  for (const name of installedPlugins(home)) {
    try {
      for (const [peer, dir] of hostLinksFor(inspectPlugin(home, name), version)) links.set(peer, dir)
    } catch {}
  }
  return links
}

async function syncLinks(place: Place, links: Map<string, string>): Promise<void> {
  if (!writeHostLinks(place.home, links)) return
  const failure = await npm(['install'], place.home, place.env)
  if (failure.failed)
    throw npmError('PLUGIN_INSTALL_FAILED', `npm could not link dsh's packages in ${place.home}`, failure)
}

export interface PluginAddOptions {
  /** Run the package's install scripts (and its dependencies'): off unless the user says so. */
  allowScripts?: boolean
  /** Let the plugin's rows replace shipped rows of the same id (listed, then recorded in the patch). */
  allowReplace?: boolean
}

/** The row ids of every bundle this dsh ships. */
function shippedRowIds(): Set<string> {
  const ids = new Set<string>()
  for (const bundle of reservedNames().bundles) {
    try {
      const file = resolveBundle(`@dsh/bundle-${bundle}`, cliDir)
      for (const row of readLayer('bundle', `bundle ${bundle}`, file).rows) ids.add(row.id)
    } catch {}
  }
  return ids
}

/** The files of $DSH_HOME a failed add must put back as they were. */
const HOME_FILES = ['package.json', 'package-lock.json', '.npmrc']

function snapshotHome(home: string) {
  const files = new Map(
    HOME_FILES.map((file) => [file, existsSync(join(home, file)) ? readFileSync(join(home, file)) : undefined]),
  )
  const created = ['node_modules', 'tarballs'].filter((dir) => !existsSync(join(home, dir)))
  return { files, created, homeExisted: existsSync(home) }
}

async function restoreHome(place: Place, snapshot: ReturnType<typeof snapshotHome>, kept: string | undefined) {
  if (kept) rmSync(kept, { force: true })
  for (const [file, content] of snapshot.files) {
    if (content === undefined) rmSync(join(place.home, file), { force: true })
    else writeFileSync(join(place.home, file), content)
  }
  // With the manifest and lockfile back, one install prunes what the failed add put in node_modules.
  if (snapshot.files.get('package.json') !== undefined) await npm(['install'], place.home, place.env)
  for (const dir of snapshot.created) rmSync(join(place.home, dir), { recursive: true, force: true })
  if (!snapshot.homeExisted) rmSync(place.home, { recursive: true, force: true })
}

export async function pluginAdd(
  request: ComposeRequest,
  spec: string,
  io: Io,
  options: PluginAddOptions = {},
): Promise<number> {
  const place = placeOf(request)
  const target = absoluteSpec(spec, request.cwd ?? process.cwd())
  // A registry name dsh reserves is refused before anything is fetched.
  if (target === spec) checkName(registryName(spec))
  const candidate = await preflight(target, place.env)
  const snapshot = snapshotHome(place.home)
  const wasInstalled = installedPlugins(place.home).includes(candidate.name)
  let kept: string | undefined
  try {
    ensurePluginHome(place.home)
    kept = keep(candidate, join(place.home, 'tarballs'))
    const failure = await npm(['install', kept], place.home, place.env, { scripts: options.allowScripts === true })
    if (failure.failed) throw npmError('PLUGIN_INSTALL_FAILED', `npm could not install ${spec}`, failure)
    if (options.allowScripts && wasInstalled && candidate.scripts.length > 0) {
      // npm sees the same package already in place and runs nothing: the scripts the user now allows
      // run through a rebuild of this one package.
      const rebuilt = await npm(['rebuild', candidate.name], place.home, place.env, { scripts: true })
      if (rebuilt.failed) throw npmError('PLUGIN_INSTALL_FAILED', `the install scripts of ${spec} failed`, rebuilt)
    }
    const version = hostVersion()
    const plugin = inspectPlugin(place.home, candidate.name)
    const links = hostLinksFor(plugin, version)
    await syncLinks(place, new Map([...wantedLinks(place.home, version), ...links]))
    const shipped = shippedRowIds()
    const replaces = plugin.rows.map((row) => row.id).filter((id) => shipped.has(id))
    if (replaces.length > 0 && !options.allowReplace) {
      throw new HarnessError(
        'PLUGIN_REPLACES_SHIPPED',
        `${candidate.name} would replace the shipped row${replaces.length > 1 ? 's' : ''} ${replaces.join(', ')} (dsh --dump-config shows what they do); nothing was installed. If you mean it: dsh plugin add --allow-replace ${spec}`,
        { name: candidate.name, rows: replaces },
      )
    }
    const changed = addBundle(place.patch, candidate.name, replaces)
    if (replaces.length > 0)
      io.out(`it replaces the shipped row${replaces.length > 1 ? 's' : ''} ${replaces.join(', ')} (you allowed it)`)
    io.out(
      `installed ${plugin.name}@${plugin.version} in ${place.home} (rows: ${plugin.rows.map((row) => row.id).join(', ')})`,
    )
    io.out(changed ? `enabled it in ${place.patch}` : `already enabled in ${place.patch}`)
    if (candidate.scripts.length > 0 && !options.allowScripts)
      io.out(
        `note: its install scripts (${candidate.scripts.join(', ')}) did not run; if it needs them: dsh plugin add --allow-scripts ${spec}`,
      )
    return ExitCode.OK
  } catch (error) {
    // Leave $DSH_HOME as it was before this add.
    await restoreHome(place, snapshot, kept)
    throw error
  } finally {
    candidate.dispose()
  }
}

export interface PluginListOptions {
  json?: boolean
}

export async function pluginList(request: ComposeRequest, options: PluginListOptions, io: Io): Promise<number> {
  const place = placeOf(request)
  const named = namedBundles(place.patch)
  const names = [...new Set([...installedPlugins(place.home), ...named.map((ref) => ref.bundle)])].sort()
  const plugins = names.map((name) => {
    const ref = named.find((entry) => entry.bundle === name)
    const state = ref ? (ref.enabled ? 'enabled' : 'disabled') : 'not in patch'
    try {
      const plugin = inspectPlugin(place.home, name)
      const rows = plugin.rows.map((row) => ({ id: row.id, use: row.use as string }))
      return { name, version: plugin.version, state, rows, problem: undefined as string | undefined }
    } catch (error) {
      const problem = HarnessError.is(error) ? error.message : String(error)
      return { name, version: undefined, state, rows: [], problem }
    }
  })
  if (options.json) {
    io.out(JSON.stringify({ home: place.home, patch: place.patch, plugins }, null, 2))
    return ExitCode.OK
  }
  if (plugins.length === 0) {
    io.out(`no plugins in ${place.home} (install one with: dsh plugin add NAME|TARBALL|DIR)`)
    return ExitCode.OK
  }
  for (const plugin of plugins) {
    io.out(`${plugin.name}${plugin.version ? `@${plugin.version}` : ''}  ${plugin.state}`)
    for (const row of plugin.rows) io.out(`  ${row.id}  ${row.use}`)
    if (plugin.problem) io.out(`  problem: ${plugin.problem}`)
  }
  return ExitCode.OK
}

export async function pluginRemove(request: ComposeRequest, name: string, io: Io): Promise<number> {
  const place = placeOf(request)
  const installed = installedPlugins(place.home).includes(name)
  const unnamed = removeBundle(place.patch, name)
  if (!installed && !unnamed) {
    const known = installedPlugins(place.home)
    throw new HarnessError(
      'PLUGIN_NOT_INSTALLED',
      `${name} is neither installed in ${place.home} nor named in ${place.patch}${known.length > 0 ? ` (installed: ${known.join(', ')})` : ''}`,
      { name },
    )
  }
  if (unnamed) io.out(`removed ${name} from ${place.patch}`)
  if (installed) {
    // One npm run: without the plugin in package.json and with only the links others need, `npm install` prunes both.
    dropDependency(place.home, name)
    writeHostLinks(place.home, wantedLinks(place.home, hostVersion()))
    const failure = await npm(['install'], place.home, place.env)
    if (failure.failed) throw npmError('PLUGIN_INSTALL_FAILED', `npm could not uninstall ${name}`, failure)
    io.out(`uninstalled ${name} from ${place.home}`)
  }
  return ExitCode.OK
}
