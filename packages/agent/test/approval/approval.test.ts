import { Context, HarnessError } from '@dsh/kernel'
import { SessionService } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import {
  type ApprovalAsked,
  type ApprovalDecided,
  ApprovalService,
  createStaticAnswerer,
} from '../../src/approval/index.js'
import StaticAnswerer from '../../src/approval/static.js'

async function setup(config?: ConstructorParameters<typeof ApprovalService>[1]) {
  const root = new Context()
  await root.plugin(ApprovalService, config)
  const asked: ApprovalAsked[] = []
  const decided: ApprovalDecided[] = []
  root.on('approval/asked', (question) => {
    asked.push(question)
  })
  root.on('approval/decided', (decision) => {
    decided.push(decision)
  })
  return { root, asked, decided }
}

const question = { sessionId: 's1', toolCallId: 'c1', toolName: 'bash', summary: 'Run `rm -rf build`' }

describe('ctx.approval', () => {
  it('fails closed with unavailable when no answerer is registered, and records the audit pair', async () => {
    const { root, asked, decided } = await setup()
    expect(root.approval.hasAnswerer).toBe(false)
    expect(await root.approval.request(question)).toBe('unavailable')
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({ ...question, policy: 'ask' })
    expect(Object.isFrozen(asked[0])).toBe(true)
    expect(decided).toEqual([
      {
        requestId: asked[0]?.requestId,
        sessionId: 's1',
        toolCallId: 'c1',
        toolName: 'bash',
        decision: 'unavailable',
        by: 'none',
        reason: 'no approval answerer is registered',
        decidedAt: expect.any(Number),
      },
    ])
  })

  it('asks the newest answerer, which lives as long as its plugin', async () => {
    const { root, decided } = await setup()
    root.approval.answer(createStaticAnswerer('rejected', 'not today'))
    const surface = root.plugin({
      name: 'surface',
      inject: ['approval'],
      apply(ctx) {
        ctx.approval.answer(() => 'allowed-once')
      },
    })
    await surface
    expect(await root.approval.request(question)).toBe('allowed-once')
    await surface.dispose()
    expect(await root.approval.ask(question)).toMatchObject({
      decision: 'rejected',
      by: 'answerer',
      reason: 'not today',
    })
    expect(decided.map((d) => [d.decision, d.by, d.reason])).toEqual([
      ['allowed-once', 'answerer', undefined],
      ['rejected', 'answerer', 'not today'],
    ])
  })

  it('turns a throwing answerer, a throwing hook and a bogus answer into unavailable', async () => {
    const { root, decided } = await setup()
    const off = root.approval.answer(() => {
      throw new Error('terminal closed')
    })
    expect(await root.approval.request(question)).toBe('unavailable')
    off()
    root.approval.answer(() => 'maybe' as never)
    expect(await root.approval.request(question)).toBe('unavailable')
    root.on('approval/request', () => {
      throw new Error('rule file unreadable')
    })
    expect(await root.approval.request(question)).toBe('unavailable')
    expect(decided.map((d) => d.reason)).toEqual([
      'the approval answerer failed: terminal closed',
      'approval answered with an invalid decision: "maybe"',
      'an approval/request hook failed: rule file unreadable',
    ])
  })

  it('lets an approval/request hook answer without asking the answerer', async () => {
    const { root, decided } = await setup()
    let asked = 0
    root.approval.answer(() => {
      asked++
      return 'rejected'
    })
    root.on('approval/request', async (q, next) =>
      q.summary.includes('npm test') ? { decision: 'allowed-once', reason: 'standing rule' } : next(),
    )
    expect(await root.approval.request({ ...question, summary: 'Run `npm test`' })).toBe('allowed-once')
    expect(await root.approval.request(question)).toBe('rejected')
    expect(asked).toBe(1)
    expect(decided.map((d) => d.by)).toEqual(['hook', 'answerer'])
  })

  it('settles as cancelled when the signal aborts, and tells the answerer to stop', async () => {
    const { root, decided } = await setup()
    let answererSignal: AbortSignal | undefined
    root.approval.answer((_q, signal) => {
      answererSignal = signal
      return new Promise(() => {})
    })
    const controller = new AbortController()
    const pending = root.approval.request(question, controller.signal)
    await new Promise((resolve) => setImmediate(resolve))
    expect(answererSignal?.aborted).toBe(false)
    controller.abort()
    expect(await pending).toBe('cancelled')
    expect(answererSignal?.aborted).toBe(true)
    expect(decided[0]).toMatchObject({ decision: 'cancelled', by: 'signal' })
    expect(await root.approval.request(question, controller.signal)).toBe('cancelled')
  })

  it('rejects every question without asking under the session policy "never"', async () => {
    const { root, asked, decided } = await setup()
    let calls = 0
    root.approval.answer(() => {
      calls++
      return 'allowed-once'
    })
    root.approval.setPolicy('s1', 'never')
    expect(root.approval.policy('s1')).toBe('never')
    expect(root.approval.policy('s2')).toBe('ask')
    expect(await root.approval.request(question)).toBe('rejected')
    expect(await root.approval.request({ ...question, sessionId: 's2' })).toBe('allowed-once')
    expect(calls).toBe(1)
    expect(asked[0]?.policy).toBe('never')
    expect(decided[0]).toMatchObject({ decision: 'rejected', by: 'policy' })
    root.approval.setPolicy('s1', undefined)
    expect(root.approval.policy('s1')).toBe('ask')
  })

  it('takes the default policy from config and refuses unknown policies', async () => {
    const { root } = await setup({ defaultPolicy: 'never' })
    expect(root.approval.policy()).toBe('never')
    expect(() => root.approval.setPolicy('s', 'sometimes' as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_APPROVAL_POLICY' }),
    )
    const bad = new Context()
    let thrown: unknown
    try {
      new ApprovalService(bad, { defaultPolicy: 'always' as never })
    } catch (error) {
      thrown = error
    }
    expect(HarnessError.is(thrown, 'INVALID_APPROVAL_POLICY')).toBe(true)
  })

  it('throws when the audit cannot be recorded (the caller must not proceed)', async () => {
    const { root } = await setup()
    root.approval.answer(() => 'allowed-once')
    root.on('approval/asked', () => {
      throw new Error('log closed')
    })
    await expect(root.approval.request(question)).rejects.toThrow('log closed')
  })

  it('answers everything the same way with the static answerer plugin (headless, --yes)', async () => {
    const { root, decided } = await setup()
    const yes = root.plugin(StaticAnswerer, { decision: 'allowed-once' })
    await yes
    expect(await root.approval.request(question)).toBe('allowed-once')
    await yes.dispose()
    const headless = root.plugin(StaticAnswerer, { reason: 'headless run: nobody can approve' })
    await headless
    expect(await root.approval.request(question)).toBe('unavailable')
    expect(decided.map((d) => [d.decision, d.reason])).toEqual([
      ['allowed-once', undefined],
      ['unavailable', 'headless run: nobody can approve'],
    ])
    await headless.dispose()
    expect(root.approval.hasAnswerer).toBe(false)
  })

  it('keeps a session grant: later same-tool same-kind questions of that session are allowed without asking', async () => {
    const { root, decided } = await setup()
    let asked = 0
    root.approval.answer(() => {
      asked++
      return { decision: 'allowed-once', grant: 'session', reason: 'allowed for this chat' }
    })
    const bash = { ...question, kind: 'tool' }
    expect(await root.approval.request(bash)).toBe('allowed-once')
    expect(decided[0]).toMatchObject({ by: 'answerer', grant: { scope: 'session', toolName: 'bash', kind: 'tool' } })
    expect(root.approval.grants('s1')).toEqual([{ scope: 'session', toolName: 'bash', kind: 'tool' }])
    expect(await root.approval.ask({ ...bash, toolCallId: 'c2', summary: 'Run `ls`' })).toMatchObject({
      decision: 'allowed-once',
      by: 'grant',
    })
    expect(asked).toBe(1)
    // Another kind, another session, and a hook that denies are not covered by the grant.
    await root.approval.request({ ...bash, kind: 'escalation' })
    await root.approval.request({ ...bash, sessionId: 's2' })
    expect(asked).toBe(3)
    const deny = root.on('approval/request', async () => ({ decision: 'rejected' as const, reason: 'a rule' }))
    expect(await root.approval.request(bash)).toBe('rejected')
    deny()
    // A question of no session cannot be granted for one.
    await root.approval.request({ toolName: 'bash', kind: 'tool', summary: 'Run `pwd`' })
    expect(asked).toBe(4)
    expect(decided.filter((d) => d.grant).map((d) => [d.sessionId, d.grant?.kind])).toEqual([
      ['s1', 'tool'],
      ['s1', 'escalation'],
      ['s2', 'tool'],
    ])
  })

  it('gives a restored session the grants its logged decisions gave, and drops them when it closes', async () => {
    const root = new Context()
    await root.plugin(SessionService)
    await root.plugin(ApprovalService)
    const session = root.sessions.create({ id: 's1' })
    const grant = { scope: 'session', toolName: 'write', kind: 'escalation' } as const
    session.append('approval/decided', {
      requestId: 'r1',
      sessionId: 's1',
      decision: 'allowed-once',
      by: 'answerer',
      grant,
      decidedAt: 1,
    })
    const other = new Context()
    await other.plugin(SessionService)
    await other.plugin(ApprovalService)
    other.approval.answer(() => 'rejected')
    const restored = other.sessions.restore(other.sessions.build(session.header, session.events as never))
    expect(other.approval.grants('s1')).toEqual([grant])
    expect(await other.approval.request({ sessionId: 's1', toolName: 'write', kind: 'escalation', summary: 'w' })).toBe(
      'allowed-once',
    )
    other.sessions.close(restored)
    expect(other.approval.grants('s1')).toEqual([])
  })
})
