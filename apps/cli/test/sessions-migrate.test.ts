// `dsh sessions migrate --to postgres://...` copies the local sessions into a throwaway PostgreSQL
// cluster, verified and idempotent (a second run copies nothing, a grown session gets its tail), and
// `DSH_SESSION_STORE=postgres://...` makes the same CLI read them from there.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { append, assistant, boot, type StoreFixture, user } from '../../../packages/session/test/store/helpers.js'
import { havePostgres, pgFixture, useCluster } from '../../../packages/session/test/store-pg/fixture.js'
import { ExitCode } from '../src/exit-codes.js'
import { runDsh } from './dsh-child.js'

const home = mkdtempSync(join(tmpdir(), 'dsh-migrate-'))
afterAll(() => rmSync(home, { recursive: true, force: true }))

function dsh(env: Record<string, string>, ...args: string[]) {
  return runDsh(args, { home, env })
}

describe.skipIf(!havePostgres)('dsh sessions migrate', () => {
  const cluster = useCluster()
  // The CLI's tables live in the default schema, so the in-process reader uses it too.
  const postgres: StoreFixture = { ...pgFixture(cluster), config: (dir) => ({ url: cluster.url(), dir }) }
  const local = join(home, 'sessions')

  async function derived(fixture: StoreFixture | 'jsonl', id: string) {
    const ctx = await boot(fixture, local)
    try {
      const session = await ctx.sessionPersistence.read(id)
      return { length: session.length, messages: session.deriveMessages() }
    } finally {
      await ctx.dispose()
    }
  }

  it('copies every local session once, verified, then only what grew; the store setting reads them back', async () => {
    const a = await boot('jsonl', local)
    const first = a.sessions.create({ id: 'm1' })
    first.append('user/message', { message: user('fix the flaky test') }, append)
    first.append('assistant/message', { message: assistant('fixed it') }, append)
    a.sessions.fork(first, undefined, 'm2')
    await a.sessions.flush()
    await a.dispose()

    const url = cluster.url()
    const copied = await dsh({}, 'sessions', 'migrate', '--to', url)
    expect(copied.stderr).toContain('2 copied')
    expect(copied.code).toBe(ExitCode.OK)
    expect(copied.stdout).toMatch(/^copied +m1 +2 events$/m)
    for (const id of ['m1', 'm2']) expect(await derived(postgres, id)).toEqual(await derived('jsonl', id))

    const again = await dsh({}, 'sessions', 'migrate', '--to', url)
    expect(again.code).toBe(ExitCode.OK)
    expect(again.stderr).toContain('0 copied, 0 completed, 2 already there')

    const b = await boot('jsonl', local)
    const grown = await b.sessionPersistence.resume('m1')
    grown.append('user/message', { message: user('and the other one') }, append)
    await b.sessionPersistence.close(grown)
    await b.dispose()
    const tail = await dsh({}, 'sessions', 'migrate', '--to', url)
    expect(tail.stdout).toMatch(/^appended +m1 +3 events$/m)
    expect(tail.stdout).toMatch(/^unchanged +m2 /m)
    expect(await derived(postgres, 'm1')).toEqual(await derived('jsonl', 'm1'))

    // The same CLI on the database: one environment variable.
    const listed = await dsh({ DSH_SESSION_STORE: url }, 'sessions', 'ls', '--json')
    expect(listed.code).toBe(ExitCode.OK)
    const summaries = JSON.parse(listed.stdout) as { id: string; eventCount: number; location: string }[]
    expect(summaries.map((s) => [s.id, s.eventCount]).sort()).toEqual([
      ['m1', 3],
      ['m2', 3],
    ])
    expect(summaries[0]?.location).toMatch(/^postgres:\/\/dsh@localhost\/postgres/)
  }, 240_000)
})
