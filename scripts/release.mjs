#!/usr/bin/env node
// The publishable shape of every workspace package, generated from one place: the root package.json holds
// the one version, the licence and the engines; every package under packages/, bundles/ and apps/ gets
// them, is public, and pins its internal `@dsh/*` dependencies to that version. A bundle depends on every
// package its rows name, so installing the bundle installs what its rows load. The Python client
// (python/pyproject.toml) carries the same version. The example plugins under examples/ are third-party
// packages (not workspaces): their `@dsh/*` peer ranges follow the version (`^X.Y.Z`).
//
//   node scripts/release.mjs check          report what is not publishable (test/release.test.ts runs it)
//   node scripts/release.mjs fix            write the generated fields (run after adding a package)
//   node scripts/release.mjs bump X.Y.Z     set the version everywhere, date the CHANGELOG's Unreleased part
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const defaultRoot = fileURLToPath(new URL('..', import.meta.url))
const GROUPS = ['packages', 'bundles', 'apps']
const DEP_FIELDS = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']
const SEMVER = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))
const writeJson = (file, value) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)

/**
 * The workspace folders the root manifest lists (`group/*` or one folder); the three groups when it
 * lists none, as in a tiny test workspace.
 */
function workspaceFolders(root) {
  const listed = readJson(join(root, 'package.json')).workspaces ?? GROUPS.map((group) => `${group}/*`)
  return listed.flatMap((entry) => {
    if (!entry.endsWith('/*')) return [entry]
    const group = entry.slice(0, -2)
    if (!existsSync(join(root, group))) return []
    return readdirSync(join(root, group))
      .sort()
      .map((name) => `${group}/${name}`)
  })
}

/** Every workspace package: its folder, manifest file and parsed manifest. */
export function workspaces(root = defaultRoot) {
  const found = []
  for (const where of workspaceFolders(root)) {
    const file = join(root, where, 'package.json')
    if (existsSync(file)) found.push({ dir: join(root, where), where, file, manifest: readJson(file) })
  }
  return found
}

/** The `@dsh/*` packages a bundle's rows name (`use: "@dsh/x/sub"` → `@dsh/x`). */
export function packagesNamedByRows(bundleDir, manifest) {
  const rowsFile = join(bundleDir, manifest.dsh?.bundle ?? 'rows.yml')
  if (!existsSync(rowsFile)) return []
  const named = new Set()
  for (const match of readFileSync(rowsFile, 'utf8').matchAll(/^\s*-?\s*use:\s*["']?(@dsh\/[\w-]+)/gm))
    named.add(match[1])
  return [...named].sort()
}

/** The Python client's version (python/pyproject.toml `[project] version`), released with the rest. */
const PY_VERSION = /^version = "([^"]*)"$/m
const pythonVersion = (file) => PY_VERSION.exec(readFileSync(file, 'utf8'))?.[1]

/** The example plugins (examples/*): third-party packages whose @dsh peers track the version. */
function examples(root) {
  const dir = join(root, 'examples')
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .sort()
    .map((name) => ({ where: `examples/${name}`, file: join(dir, name, 'package.json') }))
    .filter(({ file }) => existsSync(file))
    .map((entry) => ({ ...entry, manifest: readJson(entry.file) }))
}

function shared(root) {
  const rootManifest = readJson(join(root, 'package.json'))
  return { version: rootManifest.version, license: rootManifest.license, engines: rootManifest.engines }
}

/** The problems that keep the workspace from being packed and installed; empty when publishable. */
export function checkPackages(root = defaultRoot) {
  const { version, license, engines } = shared(root)
  const problems = []
  if (!SEMVER.test(version ?? '')) problems.push(`package.json: root "version" must be semver (got ${version})`)
  if (!license) problems.push('package.json: root "license" is missing')
  if (!engines?.node) problems.push('package.json: root "engines.node" is missing')
  const pyproject = join(root, 'python', 'pyproject.toml')
  if (existsSync(pyproject) && pythonVersion(pyproject) !== version)
    problems.push(
      `python/pyproject.toml: version ${pythonVersion(pyproject)} is not ${version} (run node scripts/release.mjs fix)`,
    )
  const names = new Set()
  for (const { dir, where, manifest } of workspaces(root)) {
    const say = (text) => problems.push(`${where}: ${text} (run node scripts/release.mjs fix)`)
    names.add(manifest.name)
    if (!manifest.name?.startsWith('@dsh/')) say(`name ${manifest.name} is not in the @dsh scope`)
    if (manifest.private) say('is private')
    if (manifest.version !== version) say(`version ${manifest.version} is not the workspace version ${version}`)
    if (manifest.license !== license) say(`license ${manifest.license} is not ${license}`)
    if (manifest.engines?.node !== engines?.node) say(`engines.node is not ${engines?.node}`)
    if (manifest.publishConfig?.access !== 'public') say('publishConfig.access is not "public"')
    if (!existsSync(join(dir, 'README.md'))) say('has no README.md')
    if (!Array.isArray(manifest.files) || manifest.files.length === 0) say('has no "files" list')
    else if (manifest.files.some((entry) => /(^|\/)(test|tests|fixtures?)(\/|$)/.test(entry)))
      say('"files" ships tests or fixtures')
    if (existsSync(join(dir, 'tsconfig.json')) && existsSync(join(dir, 'src')) && where !== 'apps/web') {
      const entries = Object.entries(manifest.exports ?? {})
      if (entries.length === 0 && !manifest.bin) say('has no "exports"')
      for (const [key, target] of entries) {
        if (typeof target !== 'object' || !target.types || !target.default)
          say(`export "${key}" lacks "types" or "default"`)
      }
      if (!manifest.files?.includes('dist')) say('"files" does not ship dist')
    }
    if (manifest.dsh?.bundle) {
      if (!manifest.files?.includes(manifest.dsh.bundle)) say(`"files" does not ship ${manifest.dsh.bundle}`)
      for (const name of packagesNamedByRows(dir, manifest))
        if (!manifest.dependencies?.[name]) say(`its rows use ${name} but it does not depend on it`)
    }
  }
  const rootEntry = { where: 'package.json', manifest: readJson(join(root, 'package.json')) }
  for (const { where, manifest } of [rootEntry, ...workspaces(root)]) {
    for (const field of DEP_FIELDS) {
      for (const [name, range] of Object.entries(manifest[field] ?? {})) {
        if (!name.startsWith('@dsh/')) continue
        if (!names.has(name)) problems.push(`${where}: ${field} names ${name}, which is not a workspace package`)
        else if (range !== version)
          problems.push(`${where}: ${field} pins ${name}@${range}, not the workspace version ${version}`)
      }
    }
  }
  for (const { where, manifest } of examples(root)) {
    for (const [name, range] of Object.entries(manifest.peerDependencies ?? {}))
      if (name.startsWith('@dsh/') && range !== `^${version}`)
        problems.push(
          `${where}: peerDependencies ${name}@${range} is not ^${version} (run node scripts/release.mjs fix)`,
        )
  }
  return problems
}

function bundleReadme(manifest, dir) {
  const rows = [...readFileSync(join(dir, manifest.dsh.bundle), 'utf8').matchAll(/^- id:\s*(\S+)/gm)].map((m) => m[1])
  return [
    `# ${manifest.name}`,
    '',
    `${manifest.description}. A dsh bundle: its rows live in \`${manifest.dsh.bundle}\` (${rows.length} rows: ${rows.map((id) => `\`${id}\``).join(', ')}).`,
    'Profiles name it under `bundles:`; `dsh --dump-config` shows the effective rows. Its dependencies are the',
    'packages its rows load.',
    '',
  ].join('\n')
}

/** Writes the generated fields into every workspace manifest (and a README for bundles without one). */
export function fixPackages(root = defaultRoot) {
  const { version, license, engines } = shared(root)
  for (const { dir, file, manifest } of workspaces(root)) {
    delete manifest.private
    manifest.version = version
    manifest.license = license
    manifest.engines = { ...engines }
    manifest.publishConfig = { access: 'public' }
    if (manifest.dsh?.bundle) {
      manifest.dependencies ??= {}
      for (const name of packagesNamedByRows(dir, manifest)) manifest.dependencies[name] ??= version
      manifest.dependencies = Object.fromEntries(
        Object.entries(manifest.dependencies).sort(([a], [b]) => a.localeCompare(b)),
      )
      if (!existsSync(join(dir, 'README.md'))) writeFileSync(join(dir, 'README.md'), bundleReadme(manifest, dir))
    }
    for (const field of DEP_FIELDS)
      for (const name of Object.keys(manifest[field] ?? {}))
        if (name.startsWith('@dsh/')) manifest[field][name] = version
    writeJson(file, manifest)
  }
  for (const { file, manifest } of examples(root)) {
    for (const name of Object.keys(manifest.peerDependencies ?? {}))
      if (name.startsWith('@dsh/')) manifest.peerDependencies[name] = `^${version}`
    writeJson(file, manifest)
  }
  const pyproject = join(root, 'python', 'pyproject.toml')
  if (existsSync(pyproject))
    writeFileSync(pyproject, readFileSync(pyproject, 'utf8').replace(PY_VERSION, `version = "${version}"`))
}

/** Sets `next` as the one version (root, packages, internal deps) and dates the CHANGELOG's Unreleased part. */
export function bumpVersion(next, root = defaultRoot, today = new Date().toISOString().slice(0, 10)) {
  if (!SEMVER.test(next)) throw new Error(`"${next}" is not a semver version like 0.2.0`)
  const rootFile = join(root, 'package.json')
  const rootManifest = readJson(rootFile)
  rootManifest.version = next
  for (const name of Object.keys(rootManifest.dependencies ?? {}))
    if (name.startsWith('@dsh/')) rootManifest.dependencies[name] = next
  writeJson(rootFile, rootManifest)
  fixPackages(root)
  const changelog = join(root, 'CHANGELOG.md')
  if (existsSync(changelog)) {
    const text = readFileSync(changelog, 'utf8')
    if (!text.includes('## Unreleased')) throw new Error('CHANGELOG.md has no "## Unreleased" section to release')
    writeFileSync(changelog, text.replace('## Unreleased', `## Unreleased\n\n## ${next} (${today})`))
  }
  return checkPackages(root)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [command, argument] = process.argv.slice(2)
  let problems
  if (command === 'check') problems = checkPackages()
  else if (command === 'fix') {
    fixPackages()
    problems = checkPackages()
  } else if (command === 'bump' && argument) problems = bumpVersion(argument)
  else {
    process.stderr.write('usage: node scripts/release.mjs check | fix | bump X.Y.Z\n')
    process.exit(2)
  }
  for (const problem of problems) process.stderr.write(`${problem}\n`)
  process.exit(problems.length === 0 ? 0 : 1)
}
