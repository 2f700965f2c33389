import { Context, HarnessError, Service } from '@dsh/kernel'
import SessionService from '@dsh/session'
import { describe, expect, it } from 'vitest'
import JobsService, { type JobOutcome, type JobProducer } from '../../src/jobs/index.js'

function producer() {
  let output = ''
  let finish: (outcome: JobOutcome) => void = () => {}
  const done = new Promise<JobOutcome>((resolve) => {
    finish = resolve
  })
  const p: JobProducer & { write(text: string): void; finish(outcome: JobOutcome): void; cancelled: number } = {
    cancelled: 0,
    read: (start, max) => {
      const text = output.slice(start, start + max)
      return { text, next: start + text.length, lost: 0 }
    },
    totalBytes: () => output.length,
    done,
    cancel: async () => {
      p.cancelled++
      finish({ status: 'killed', summary: 'killed' })
    },
    write: (text) => {
      output += text
    },
    finish: (outcome) => finish(outcome),
  }
  return p
}

async function setup(config = {}) {
  const root = new Context()
  await root.plugin(JobsService, config)
  return root
}

const alice = { sessionId: 's1', agentId: 'a' }
const bob = { sessionId: 's1', agentId: 'b' }

describe('ctx.jobs', () => {
  it('authorizes by exact owner identity and reads through one cursor', async () => {
    const root = await setup()
    const p = producer()
    const job = await root.jobs.start({ owner: alice, kind: 'bash', title: 'make', start: async () => p })
    expect(job).toMatchObject({ id: 'job-1', status: 'running', title: 'make' })
    expect(() => root.jobs.get(job.id, bob)).toThrow(/no job job-1/)
    expect(root.jobs.list(bob)).toEqual([])
    p.write('abcdef')
    expect(root.jobs.read(job.id, alice, 4)).toMatchObject({ text: 'abcd', more: true })
    expect(root.jobs.read(job.id, alice)).toMatchObject({ text: 'ef', more: false })
    expect(root.jobs.read(job.id, alice).text).toBe('')
    p.finish({ status: 'completed', summary: 'exit code 0' })
    expect(await root.jobs.wait(job.id, alice)).toMatchObject({ status: 'completed', summary: 'exit code 0' })
  })

  it('peeks from any offset without moving the cursor the model reads through', async () => {
    const root = await setup()
    const p = producer()
    const job = await root.jobs.start({ owner: alice, kind: 'bash', title: 'tail', start: async () => p })
    p.write('line 1\nline 2\n')
    expect(root.jobs.peek(job.id, alice, 0)).toMatchObject({ text: 'line 1\nline 2\n', next: 14, lost: 0 })
    expect(root.jobs.peek(job.id, alice, 7, 3)).toMatchObject({ text: 'lin', next: 10 })
    expect(root.jobs.get(job.id, alice).unreadBytes).toBe(14)
    expect(() => root.jobs.peek(job.id, bob, 0)).toThrow(/no job job-1/)
    // The cursor still starts at the first byte.
    expect(root.jobs.read(job.id, alice).text).toBe('line 1\nline 2\n')
  })

  it('refuses beyond capacity before starting anything, and kill is idempotent', async () => {
    const root = await setup({ maxRunningPerOwner: 1 })
    const p = producer()
    const job = await root.jobs.start({ owner: alice, kind: 'bash', title: 'a', start: async () => p })
    let started = false
    const refused = await root.jobs
      .start({
        owner: alice,
        kind: 'bash',
        title: 'b',
        start: async () => {
          started = true
          return producer()
        },
      })
      .catch((e) => e)
    expect(HarnessError.is(refused, 'JOBS_CAPACITY')).toBe(true)
    expect(started).toBe(false)
    await root.jobs.start({ owner: bob, kind: 'bash', title: 'c', start: async () => producer() })
    expect((await root.jobs.kill(job.id, alice)).status).toBe('killed')
    expect((await root.jobs.kill(job.id, alice)).status).toBe('killed')
    expect(p.cancelled).toBe(1)
  })

  it('cancels running jobs when the service is disposed', async () => {
    const root = new Context()
    const fiber = root.plugin(JobsService)
    await fiber
    const p = producer()
    await root.jobs.start({ owner: alice, kind: 'bash', title: 'a', start: async () => p })
    await fiber.dispose()
    expect(p.cancelled).toBe(1)
  })

  it('kills the running jobs of an agent when it is disposed, and only those', async () => {
    const root = await setup()
    const mine = producer()
    const other = producer()
    await root.jobs.start({ owner: alice, kind: 'bash', title: 'a', start: async () => mine })
    await root.jobs.start({ owner: bob, kind: 'bash', title: 'b', start: async () => other })
    root.emit('agent/disposed', { id: 'a', session: { id: 's1' } } as never)
    await root.jobs.wait('job-1', alice)
    expect(root.jobs.get('job-1', alice).status).toBe('killed')
    expect(root.jobs.get('job-2', bob).status).toBe('running')
    expect([mine.cancelled, other.cancelled]).toEqual([1, 0])
  })

  it('wakes an idle owner agent at most maxWakeups times in a row, then only injects', async () => {
    const root = await setup({ maxWakeups: 2 })
    const calls: string[] = []
    const agent = {
      id: 'a',
      session: { id: 's1' },
      phase: 'idle',
      disposed: false,
      followup: () => calls.push('followup'),
      inject: () => calls.push('inject'),
    }
    class FakeAgents extends Service {
      static readonly provide = 'agents'
      constructor(ctx: Context) {
        super(ctx, 'agents')
      }
      get(id: string) {
        return id === 'a' ? agent : undefined
      }
    }
    await root.plugin(FakeAgents)
    for (let i = 0; i < 3; i++) {
      const p = producer()
      const job = await root.jobs.start({ owner: alice, kind: 'bash', title: `t${i}`, start: async () => p })
      p.finish({ status: 'completed', summary: 'exit code 0' })
      await root.jobs.wait(job.id, alice)
    }
    expect(calls).toEqual(['followup', 'followup', 'inject'])
    const finishOne = async () => {
      const p = producer()
      const job = await root.jobs.start({ owner: alice, kind: 'bash', title: 't', start: async () => p })
      p.finish({ status: 'completed', summary: 'exit code 0' })
      await root.jobs.wait(job.id, alice)
    }
    // The budget is refilled from the session log: real commits, through the sessions service.
    await root.plugin(SessionService)
    const session = root.sessions.create({ id: 's1' })
    const userMessage = (text: string) =>
      session.append(
        'user/message',
        { message: { role: 'user', content: [{ type: 'text', text }] } },
        { surfaceOp: { op: 'append' } },
      )
    // A notice entering the log does not refill the budget; a real user message does.
    userMessage('[job job-1 completed: exit code 0] t')
    await finishOne()
    expect(calls.at(-1)).toBe('inject')
    userMessage('thanks, go on')
    await finishOne()
    expect(calls.at(-1)).toBe('followup')
  })
})
