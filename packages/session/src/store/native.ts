// better-sqlite3 is an optional dependency (a native addon: a prebuilt binary or a C++ toolchain at
// install time). Only the SQLite store and the search index load it, on first use, so an install where
// it failed still runs on the JSONL store and says what to do when a SQLite feature is asked for.
import { createRequire } from 'node:module'
import { HarnessError } from '@dsh/kernel'
import type BetterSqlite3 from 'better-sqlite3'

export function loadBetterSqlite3(feature: string): typeof BetterSqlite3 {
  try {
    return createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3
  } catch (error) {
    throw new HarnessError(
      'DEPENDENCY_MISSING',
      `${feature} needs better-sqlite3, which is not installed or did not build (${(error as Error).message.split('\n')[0]}); install it next to dsh (npm install better-sqlite3@12 in the directory that holds @dsh/session/store), or keep the default JSONL session store`,
      { dependency: 'better-sqlite3', feature },
    )
  }
}
