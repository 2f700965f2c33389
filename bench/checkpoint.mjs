// Rewind's costs (issue 32 goals): a checkpoint on a 10,000-file workspace (the size class of the
// Linux kernel's tools/ folder, generated here: 400 folders of 25 source files, 1-8 KiB each), taken
// the first time ever, a new session's first one (seeded from an earlier session's index), warm after a turn changed 20 files, and warm with nothing changed; and a
// files rewind of a turn that changed 100 files. Beside each, the baseline this script also measures:
// a plain walk of the tree (readdir + lstat of every entry in this process), the least any snapshot
// that looks at every file can cost. Medians of BENCH_RUNS (default 5). Needs `npm run build`.
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import ShadowGitSnapshots from '@dsh/world/snapshots/shadow-git'

const runs = Number(process.env.BENCH_RUNS ?? 5)
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const time = async (work) => {
  const start = performance.now()
  await work()
  return performance.now() - start
}

function walk(dir) {
  let count = 0
  for (const name of readdirSync(dir)) {
    const stat = lstatSync(join(dir, name))
    if (stat.isDirectory()) count += walk(join(dir, name))
    else count++
  }
  return count
}

function generate(ws) {
  for (let d = 0; d < 400; d++) {
    mkdirSync(join(ws, `mod${d}`))
    for (let f = 0; f < 25; f++)
      writeFileSync(
        join(ws, `mod${d}`, `file${f}.c`),
        `/* ${d}/${f} */\n${'int x;\n'.repeat(128 + ((d * 25 + f) % 896))}`,
      )
  }
}

const root = mkdtempSync(join(tmpdir(), 'dsh-bench-checkpoint-'))
const ws = join(root, 'ws')
mkdirSync(ws)
generate(ws)
async function provider(dir) {
  const ctx = new Context()
  const fiber = ctx.plugin(ShadowGitSnapshots, { dir })
  await fiber
  return { fiber, snapshots: ctx.get('snapshots') }
}

const { fiber, snapshots } = await provider(join(root, 'checkpoints'))
const results = { walk: [], cold: [], seeded: [], changed20: [], unchanged: [], rewind100: [] }
for (let run = 0; run < runs; run++) {
  const session = `bench-${run}`
  results.walk.push(await time(() => walk(ws)))
  // The first snapshot ever of this workspace (a store of its own: every file hashed and stored).
  const fresh = await provider(join(root, `fresh-${run}`))
  results.cold.push(await time(() => fresh.snapshots.take({ cwd: ws, sessionId: session })))
  await fresh.fiber.dispose()
  // A new session's first snapshot where another session took one before (its index is the seed).
  if (run === 0) await snapshots.take({ cwd: ws, sessionId: 'earlier' })
  results.seeded.push(await time(() => snapshots.take({ cwd: ws, sessionId: session })))
  for (let i = 0; i < 20; i++) writeFileSync(join(ws, `mod${i}`, 'file0.c'), `changed ${run} ${i}\n`)
  results.changed20.push(await time(() => snapshots.take({ cwd: ws, sessionId: session })))
  results.unchanged.push(await time(() => snapshots.take({ cwd: ws, sessionId: session })))
  // A turn that changes 100 files (edits and new ones), then the files rewind of it: the current
  // snapshot, the diff, the restore and the snapshot after, as ctx.rewind does them.
  const before = await snapshots.take({ cwd: ws, sessionId: session })
  for (let i = 0; i < 50; i++) writeFileSync(join(ws, `mod${100 + i}`, 'file1.c'), `edited ${run}\n`)
  for (let i = 0; i < 50; i++) writeFileSync(join(ws, `mod${200 + i}`, `new${run}.c`), `new ${run}\n`)
  results.rewind100.push(
    await time(async () => {
      const now = await snapshots.take({ cwd: ws, sessionId: session })
      const changes = await snapshots.changes(ws, before.id, now.id)
      if (changes.length !== 100) throw new Error(`expected 100 changes, got ${changes.length}`)
      await snapshots.restore({ cwd: ws, to: before.id, paths: changes.map((change) => change.path) })
      await snapshots.take({ cwd: ws, sessionId: session })
    }),
  )
}
await fiber.dispose()
rmSync(root, { recursive: true, force: true })

const walkMs = median(results.walk)
const rows = [
  ['baseline: walk the tree (readdir + lstat)', walkMs],
  ['first snapshot ever of the workspace (once)', median(results.cold)],
  ["a new session's first checkpoint (seeded)", median(results.seeded)],
  ['checkpoint after a turn changed 20 files', median(results.changed20)],
  ['checkpoint, nothing changed since the last', median(results.unchanged)],
  ['files rewind of a turn that changed 100 files', median(results.rewind100)],
]
console.log(`checkpoints on a 10,000-file workspace, median of ${runs} runs`)
for (const [name, ms] of rows)
  console.log(`${name.padEnd(52)} ${ms.toFixed(1).padStart(8)} ms  ${(ms / walkMs).toFixed(2).padStart(6)}x walk`)
