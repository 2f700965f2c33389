// Build step: the shipped bundles' rows files, profile templates and presets parsed once into the composition
// package's parse cache (packages/composition/parsed/, not committed), so a start in a fresh $DSH_HOME
// does not load or run the YAML parser for them (decision 391). Needs the composition package built
// (`tsc -b`); `npm run build` and `npm ci` (prepare) run it. The cache is keyed by content: a file
// edited after this ran parses as before, so a stale cache is slower, never wrong.
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dist = join(root, 'packages', 'composition', 'dist')
const { readLayerEntries } = await import(join(dist, 'layers.js'))
const { parseProfileText } = await import(join(dist, 'profile.js'))
const { cachedParse, shippedCacheDir } = await import(join(dist, 'parse-cache.js'))
const presets = join(root, 'packages', 'presets')
const { readPreset } = await import(join(presets, 'dist', 'format.js'))

/** Every YAML file dsh reads at start-up: each bundle's rows file, each profile template's files. */
function shippedFiles() {
  const files = []
  for (const bundle of readdirSync(join(root, 'bundles'))) {
    const manifest = JSON.parse(readFileSync(join(root, 'bundles', bundle, 'package.json'), 'utf8'))
    if (typeof manifest.dsh?.bundle === 'string') files.push(join(root, 'bundles', bundle, manifest.dsh.bundle))
  }
  const profiles = join(root, 'apps', 'cli', 'profiles')
  for (const profile of readdirSync(profiles)) {
    for (const file of readdirSync(join(profiles, profile))) {
      if (file.endsWith('.yml')) files.push(join(profiles, profile, file))
    }
  }
  return files
}

rmSync(shippedCacheDir, { recursive: true, force: true })
const cache = { dirs: [shippedCacheDir] }
const files = shippedFiles()
for (const file of files) {
  if (file.endsWith('profile.yml')) {
    const text = readFileSync(file, 'utf8')
    cachedParse(cache, 'profile', text, () => parseProfileText(text))
  } else readLayerEntries(file, file, cache)
}
const shippedPresets = readdirSync(join(presets, 'shipped'))
for (const name of shippedPresets) {
  const dir = join(presets, 'shipped', name)
  await readPreset(name, { origin: 'shipped', dir, file: join(dir, 'preset.yml') }, cache)
}
console.log(`parsed ${files.length + shippedPresets.length} shipped YAML files into ${shippedCacheDir}`)
