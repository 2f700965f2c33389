// Runs every benchmark in this directory (each `bench/*.mjs` except this file), one after another.
// Benchmarks import the built packages: run `npm run build` first.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)
let failed = 0
for (const name of readdirSync(here).sort()) {
  if (!name.endsWith('.mjs') || name === 'run.mjs') continue
  if (only.length > 0 && !only.some((word) => name.includes(word))) continue
  console.log(`# ${name}`)
  const result = spawnSync(process.execPath, [join(here, name)], { stdio: 'inherit' })
  if (result.status !== 0) failed++
}
process.exit(failed ? 1 : 0)
