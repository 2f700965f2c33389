// `dsh sessions migrate --to postgres://...`: copies every session of the profile's store (the local
// JSONL or SQLite) into PostgreSQL, verified by comparing derived messages; safe to run again.
import type { Migrated } from '@dsh/session/store-pg/migrate'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { withRuntime } from '../runtime.js'

export async function sessionsMigrate(
  request: ComposeRequest,
  options: { to: string; schema?: string },
  io: Io,
): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const { migrateSessions } = await import('@dsh/session/store-pg/migrate')
    const sessions = runtime.root.sessions
    const line = (result: Migrated) =>
      `${result.outcome.padEnd(9)} ${result.id}  ${result.reason ?? `${result.events} events`}`
    const results = await migrateSessions(
      runtime.root.sessionStore,
      { url: options.to, ...(options.schema ? { schema: options.schema } : {}) },
      (stored, id) => sessions.build(stored.header, stored.records, stored.location, id).deriveMessages(),
      (result) => (result.outcome === 'failed' ? io.err(`dsh: ${line(result)}`) : io.out(line(result))),
    )
    const count = (outcome: Migrated['outcome']) => results.filter((result) => result.outcome === outcome).length
    io.err(
      `dsh: ${count('copied')} copied, ${count('appended')} completed, ${count('unchanged')} already there, ${count('skipped')} skipped, ${count('failed')} failed`,
    )
    return count('failed') > 0 ? ExitCode.ERROR : ExitCode.OK
  })
}
