import { Context, HarnessError } from '@dsh/kernel'
import SessionService from '@dsh/session'
import { describe, expect, it } from 'vitest'
import checkpoint from '../../src/store/checkpoint.js'
import type { WriteBatch } from '../../src/store/index.js'
import { append, boot, tempDir, until, user } from './helpers.js'

describe('the checkpoint policy', () => {
  it('flushes before model dispatch, tool bodies, pre-steps and at turn end so the causing prefix is written', async () => {
    using dir = tempDir()
    const ctx = await boot('jsonl', dir.path, { delayMs: 60_000 }, [[checkpoint, {}]])
    await new Promise((resolve) => setImmediate(resolve))
    const session = ctx.sessions.create({ id: 'c' })
    for (const boundary of ['model-dispatch', 'tool-body', 'pre-step', 'turn-end'] as const) {
      session.append('user/message', { message: user(boundary) }, append)
      await ctx.sessions.checkpoint(session, boundary)
      expect((await ctx.sessionStore.read('c'))?.records).toHaveLength(session.length)
    }
    await ctx.dispose()
  })

  it('durability where it buys something: pre-step and model dispatch write, a tool body with side effects and the turn end sync, a read-only body does nothing', async () => {
    for (const [config, expected] of [
      [{}, { preStep: false, dispatch: false, readOnly: 'none', body: true, turnEnd: true }],
      [
        { writeOnly: [], readOnlyBodies: 'sync' },
        { preStep: true, dispatch: true, readOnly: true, body: true, turnEnd: true },
      ],
      [{ readOnlyBodies: 'write' }, { preStep: false, dispatch: false, readOnly: false, body: true, turnEnd: true }],
    ] as const) {
      using dir = tempDir()
      const ctx = await boot('jsonl', dir.path, { delayMs: 60_000 }, [[checkpoint, config]])
      await new Promise((resolve) => setImmediate(resolve))
      const store = ctx.sessionStore as unknown as { backend: { write(id: string, b: WriteBatch): Promise<void> } }
      const write = store.backend.write.bind(store.backend)
      const syncs: boolean[] = []
      store.backend.write = (id, batch) => {
        syncs.push(batch.sync)
        return write(id, batch)
      }
      const session = ctx.sessions.create({ id: 'c' })
      const step = async (
        text: string,
        boundary: 'pre-step' | 'model-dispatch' | 'tool-body' | 'turn-end',
        readOnly = false,
      ) => {
        session.append('user/message', { message: user(text) }, append)
        const before = syncs.length
        await ctx.sessions.checkpoint(session, boundary, undefined, { readOnly })
        return syncs.length === before ? 'none' : syncs.at(-1)
      }
      expect(await step('claimed', 'pre-step')).toBe(expected.preStep)
      // Written: a reader (or a resume after the process was killed) sees it.
      expect((await ctx.sessionStore.read('c'))?.records).toHaveLength(session.length)
      expect(await step('request', 'model-dispatch')).toBe(expected.dispatch)
      expect(await step('read a file', 'tool-body', true)).toBe(expected.readOnly)
      expect(await step('write a file', 'tool-body')).toBe(expected.body)
      expect((await ctx.sessionStore.read('c'))?.records).toHaveLength(session.length)
      expect(await step('done', 'turn-end')).toBe(expected.turnEnd)
      expect((await ctx.sessionStore.read('c'))?.records).toHaveLength(session.length)
      await ctx.dispose()
    }
  })

  it('blocks the action when the flush fails, and skips boundaries it is not configured for', async () => {
    using dir = tempDir()
    const ctx = await boot('jsonl', dir.path, { delayMs: 60_000 }, [[checkpoint, { boundaries: ['tool-body'] }]])
    await new Promise((resolve) => setImmediate(resolve))
    const store = ctx.sessionStore as unknown as { backend: { write(id: string, b: WriteBatch): Promise<void> } }
    store.backend.write = () => Promise.reject(new Error('EIO'))
    const session = ctx.sessions.create({ id: 'c' })
    session.append('turn/start', {})
    await ctx.sessions.checkpoint(session, 'model-dispatch')
    let ran = false
    const action = ctx.sessions.checkpoint(session, 'tool-body', 'bash').then(() => {
      ran = true
    })
    const error = await action.catch((e: unknown) => e)
    expect(ran).toBe(false)
    expect(HarnessError.is(error, 'SESSION_CHECKPOINT_FAILED')).toBe(true)
    expect((error as HarnessError).facts).toMatchObject({ id: 'c', boundary: 'tool-body', detail: 'bash' })
    expect((error as Error).message).toMatch(/EIO/)
    await ctx.dispose()
  })

  it('without persistence it lets actions run, unless configured to require durability', async () => {
    const ctx = new Context()
    ctx.plugin(SessionService)
    ctx.plugin(checkpoint, { requireDurable: true })
    await until(ctx, 'sessions')
    await new Promise((resolve) => setImmediate(resolve))
    const session = ctx.sessions.create()
    await expect(ctx.sessions.checkpoint(session, 'pre-step')).rejects.toMatchObject({
      code: 'SESSION_CHECKPOINT_FAILED',
    })
  })
})
