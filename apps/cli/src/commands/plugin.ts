// `dsh plugin add|ls|rm`: out-of-tree plugins. A plugin is an npm package that is a dsh bundle; `add`
// installs it into $DSH_HOME with npm, checks it, links the `@dsh/*` packages it peers on to this dsh
// install, and names it in $DSH_HOME/patch.yml (`- bundle: NAME`), which every profile applies;
// `rm` undoes both. Decision 310.
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { dshHome } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import {
  dropDependency,
  ensurePluginHome,
  HOST_SCOPE,
  homeDependencies,
  hostVersion,
  installedPlugins,
  writeHostLinks,
} from '../plugins/home.js'
import { hostLinksFor, inspectPlugin, type PluginInfo } from '../plugins/inspect.js'
import { isNotFound, type NpmFailure, npm } from '../plugins/npm.js'
import { addBundle, namedBundles, removeBundle } from '../plugins/patch-file.js'

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

/**
 * A package directory is packed into $DSH_HOME/tarballs and installed from there: npm would link a
 * directory, and a linked plugin resolves `@dsh/*` from its own folder, not from dsh's links.
 */
async function packed(place: Place, target: string): Promise<string> {
  if (!existsSync(join(target, 'package.json'))) return target
  const tarballs = join(place.home, 'tarballs')
  mkdirSync(tarballs, { recursive: true })
  const result = await npm(['pack', target, '--pack-destination', tarballs, '--json'], place.home, place.env)
  if (result.failed) throw npmError('PLUGIN_INSTALL_FAILED', `npm could not pack ${target}`, result)
  const [file] = (JSON.parse(result.stdout) as Array<{ filename: string }>).map((entry) => entry.filename)
  if (!file) throw new HarnessError('PLUGIN_INSTALL_FAILED', `npm pack ${target} made no tarball`, { target })
  return join(tarballs, file)
}

export async function pluginAdd(request: ComposeRequest, spec: string, io: Io): Promise<number> {
  const place = placeOf(request)
  const target = absoluteSpec(spec, request.cwd ?? process.cwd())
  ensurePluginHome(place.home)
  const before = homeDependencies(place.home)
  const source = await packed(place, target)
  const failure = await npm(['install', source], place.home, place.env)
  if (failure.failed) {
    const notFound = isNotFound(failure)
    throw npmError(
      notFound ? 'PLUGIN_NOT_FOUND' : 'PLUGIN_INSTALL_FAILED',
      notFound ? `plugin package ${spec} not found` : `npm could not install ${spec}`,
      failure,
    )
  }
  const after = homeDependencies(place.home)
  // The new or changed dependency; when re-adding the same file, the one npm saved for that file.
  const plugins = Object.keys(after).filter((key) => !key.startsWith(HOST_SCOPE))
  const name =
    plugins.find((key) => after[key] !== before[key]) ??
    plugins.find((key) => after[key]?.startsWith('file:') && resolve(place.home, after[key].slice(5)) === source) ??
    (target === spec ? registryName(spec) : undefined)
  if (!name) {
    throw new HarnessError('PLUGIN_INSTALL_FAILED', `npm installed ${spec} but dsh cannot tell which package it is`, {
      spec,
    })
  }
  const version = hostVersion()
  let plugin: PluginInfo
  let links: Map<string, string>
  try {
    plugin = inspectPlugin(place.home, name)
    links = hostLinksFor(plugin, version)
  } catch (error) {
    // Leave $DSH_HOME as it was: the previous version back, or nothing.
    const previous = before[name]
    await npm(previous ? ['install', `${name}@${previous}`] : ['uninstall', name], place.home, place.env)
    if (source !== target && !previous) rmSync(source, { force: true })
    throw error
  }
  await syncLinks(place, new Map([...wantedLinks(place.home, version), ...links]))
  const changed = addBundle(place.patch, name)
  io.out(
    `installed ${plugin.name}@${plugin.version} in ${place.home} (rows: ${plugin.rows.map((row) => row.id).join(', ')})`,
  )
  io.out(changed ? `enabled it in ${place.patch}` : `already enabled in ${place.patch}`)
  return ExitCode.OK
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
