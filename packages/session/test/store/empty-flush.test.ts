import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import { SessionService } from '@dsh/session'
import { expect, it } from 'vitest'
import SessionPersistence from '../../src/store/coordinator.js'
import JsonlSessionStore from '../../src/store/jsonl.js'

it('flushes a session that has no events yet (the header alone becomes durable)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-empty-'))
  try {
    const root = new Context()
    root.plugin(SessionService)
    root.plugin(JsonlSessionStore, { dir })
    await root.plugin(SessionPersistence)
    const session = root.sessions.create()
    const flushed = await Promise.race([
      root.sessions.flush(session),
      new Promise((resolve) => setTimeout(() => resolve('timed out'), 5000)),
    ])
    expect(flushed).toBe(true)
    const stored = await root.sessionStore.read(session.id)
    expect(stored?.header).toMatchObject({ id: session.id })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
