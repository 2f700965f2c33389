// Crash safety (SIGKILL) of the local providers; the rounds themselves are in suites/crash.ts.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { jsonlFixture, sqliteFixture, tempDir } from './helpers.js'
import { crashRounds } from './suites/crash.js'

const dist = fileURLToPath(new URL('../../dist/store/coordinator.js', import.meta.url))

describe.skipIf(!existsSync(dist))('crash safety (SIGKILL)', () => {
  it('loses no acknowledged event and leaves no call without a result across 50 kills on both backends', async () => {
    using dir = tempDir()
    const report = await crashRounds(dir.path, [jsonlFixture, sqliteFixture], 10, 5)
    expect(report.kills).toBeGreaterThanOrEqual(50)
    expect(report.repaired).toBeGreaterThan(0)
    console.info(
      `crash test: ${report.kills} kills, ${report.repaired} repairs, ${report.torn} torn tails, ${report.events} events in the final logs`,
    )
  }, 180_000)
})
