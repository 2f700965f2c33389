// Leases across hosts with fencing: a holder paused past its expiry (SIGSTOP) loses the session to
// another process, and once resumed (SIGCONT) its append is refused by the fencing token; the durable
// log holds every acknowledged event once. Also: a holder on another host is judged by expiry alone.
import { type ChildProcessByStdio, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { boot, tempDir } from '../store/helpers.js'
import { havePostgres, pgFixture, sql, useCluster } from './fixture.js'

const holder = fileURLToPath(new URL('./fixtures/lease-holder.mjs', import.meta.url))
const dist = fileURLToPath(new URL('../../dist/store-pg/index.js', import.meta.url))
const TTL = 1500

/** The next stdout line of `child` that starts with one of `words`. */
function nextLine(child: ChildProcessByStdio<Writable, Readable, null>, words: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = ''
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString()
      for (const line of buffer.split('\n').slice(0, -1)) {
        if (words.some((word) => line.startsWith(word))) {
          child.stdout.off('data', onData)
          resolve(line)
          return
        }
      }
    }
    child.stdout.on('data', onData)
    child.once('exit', (code) => reject(new Error(`host A exited with ${code}`)))
  })
}

function texts(records: unknown[]): string[] {
  return records.flatMap((record) => {
    const message = (record as { data?: { message?: { content?: { text?: string }[] } } }).data?.message
    return message?.content?.map((block) => block.text ?? '') ?? []
  })
}

async function untilExpired(url: string, schema: string, id: string): Promise<void> {
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    const row = await sql(url, schema, 'SELECT expires_at < now() AS expired FROM dsh_leases WHERE session_id = $1', [
      id,
    ])
    if (row.rows[0]?.expired) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error('the lease never expired')
}

describe.skipIf(!havePostgres)('leases across hosts', () => {
  const cluster = useCluster()
  const fixture = pgFixture(cluster, { leaseTtlMs: TTL })

  it.skipIf(!existsSync(dist))(
    'a holder paused past its expiry is taken over, and its next append is refused by the fencing token',
    async () => {
      using dir = tempDir()
      const config = fixture.config(dir.path)
      const a = spawn(process.execPath, [holder, JSON.stringify(config), 'x'], { stdio: ['pipe', 'pipe', 'inherit'] })
      try {
        expect(await nextLine(a, ['READY'])).toBe('READY 1')
        const b = await boot(fixture, dir.path)
        // While A lives and renews, B is refused with A named.
        const refused = await b.sessionPersistence.resume('x').catch((error: unknown) => error)
        expect(HarnessError.is(refused, 'SESSION_LEASED')).toBe(true)
        expect((refused as Error).message).toContain(`pid ${a.pid}`)

        a.kill('SIGSTOP')
        await untilExpired(cluster.url(), fixture.schemaOf(dir.path), 'x')
        const session = await b.sessionPersistence.resume('x')
        session.append(
          'user/message',
          { message: { role: 'user', content: [{ type: 'text', text: 'from B' }] } },
          { surfaceOp: { op: 'append' } },
        )
        await b.sessions.flush(session)

        a.kill('SIGCONT')
        a.stdin.write('append from A after the pause\n')
        const answer = await nextLine(a, ['ACK', 'ERR'])
        expect(answer).toMatch(/^ERR SESSION_LEASE_LOST .*lost its lease .*took it over/)

        const stored = await b.sessionStore.read('x')
        expect(stored?.records.map((record) => (record as { seq: number }).seq)).toEqual([0, 1])
        expect(texts(stored?.records ?? [])).toEqual(['from A before the pause', 'from B'])
        expect(stored?.records).toEqual([...session.events])
        await b.dispose()
      } finally {
        a.kill('SIGKILL')
      }
    },
    60_000,
  )

  it('judges a holder on another host by its expiry alone, then takes over with a new token', async () => {
    using dir = tempDir()
    const schema = fixture.schemaOf(dir.path)
    const a = await boot(fixture, dir.path)
    const session = a.sessions.create({ id: 'y' })
    await a.sessions.flush(session)
    // Another host's holder: its pid means nothing here, so only the expiry can free the session.
    await sql(cluster.url(), schema, `UPDATE dsh_leases SET host = 'elsewhere', pid = 1 WHERE session_id = 'y'`)
    const before = (await sql(cluster.url(), schema, `SELECT token::text FROM dsh_leases WHERE session_id = 'y'`))
      .rows[0]
    const b = await boot(fixture, dir.path)
    await expect(b.sessionPersistence.resume('y')).rejects.toMatchObject({
      code: 'SESSION_LEASED',
      message: expect.stringContaining('pid 1 on elsewhere'),
    })
    await sql(
      cluster.url(),
      schema,
      `UPDATE dsh_leases SET expires_at = now() - interval '1 second' WHERE session_id = 'y'`,
    )
    const resumed = await b.sessionPersistence.resume('y')
    const after = (await sql(cluster.url(), schema, `SELECT token::text, host FROM dsh_leases WHERE session_id = 'y'`))
      .rows[0]
    expect(Number(after?.token)).toBeGreaterThan(Number(before?.token))
    // A's own append now fails loudly.
    session.append('step/start', {})
    await expect(a.sessions.flush(session)).rejects.toMatchObject({ code: 'SESSION_LEASE_LOST' })
    expect((await b.sessionStore.read('y'))?.records).toHaveLength(resumed.length)
    await b.dispose()
    await a.dispose()
  })
  it('lists each session with the lease another process holds on it: busy, then expired', async () => {
    using dir = tempDir()
    const schema = fixture.schemaOf(dir.path)
    const a = await boot(fixture, dir.path)
    const session = a.sessions.create({ id: 'z' })
    await a.sessions.flush(session)
    // The holder's own list does not mark its own lease.
    expect((await a.sessionStore.summaries()).find((row) => row.id === 'z')?.holder).toBeUndefined()
    await sql(cluster.url(), schema, `UPDATE dsh_leases SET host = 'elsewhere', pid = 7 WHERE session_id = 'z'`)
    const b = await boot(fixture, dir.path)
    const busy = (await b.sessionStore.summaries()).find((row) => row.id === 'z')?.holder
    expect(busy).toMatchObject({ host: 'elsewhere', pid: 7, live: true })
    expect(busy?.expiresAt).toBeGreaterThan(busy?.acquiredAt ?? Number.POSITIVE_INFINITY)
    await sql(
      cluster.url(),
      schema,
      `UPDATE dsh_leases SET expires_at = now() - interval '1 second' WHERE session_id = 'z'`,
    )
    expect((await b.sessionStore.summaries()).find((row) => row.id === 'z')?.holder).toMatchObject({
      pid: 7,
      live: false,
    })
    // Taken over, the lease is B's own and no longer listed as another's.
    await b.sessionPersistence.resume('z')
    expect((await b.sessionStore.summaries()).find((row) => row.id === 'z')?.holder).toBeUndefined()
    await b.dispose()
    await a.dispose()
  })
})
