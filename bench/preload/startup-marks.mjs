// Preloaded into the measured `dsh` by bench/startup.mjs (NODE_OPTIONS=--import; kept out of the top
// level because `npm run bench` runs every bench/*.mjs there): at exit, writes the process's time origin
// and its performance marks (dsh:cli-loaded, dsh:compose-start, dsh:composed, dsh:rows-imported,
// dsh:booted) to $DSH_BENCH_MARKS as JSON. Not part of dsh.
import { writeFileSync } from 'node:fs'

const file = process.env.DSH_BENCH_MARKS
if (file) {
  process.on('exit', () => {
    const marks = performance.getEntriesByType('mark').map((mark) => [mark.name, mark.startTime])
    writeFileSync(file, JSON.stringify({ origin: performance.timeOrigin, marks }))
  })
}
