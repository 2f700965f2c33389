// The session host on its own: the real session, persistence (JSONL on a temp dir), approval,
// question, command, agent and loop rows under one Context, the scripted model. Outcomes are read
// from the logs (live and durable), the store and the tools' effects.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStaticAnswerer } from '@dsh/agent/approval'
import { defineTool } from '@dsh/agent/tools'
import builtinCommands from '@dsh/interaction/builtin-commands'
import CommandsService from '@dsh/interaction/commands'
import UserQuestionsService from '@dsh/interaction/questions'
import { HarnessError } from '@dsh/kernel'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import SessionPersistence from '@dsh/session/store/coordinator'
import JsonlSessionStore from '@dsh/session/store/jsonl'
import SessionQuery from '@dsh/session/store/query'
import { startInProcess } from '@dsh/test-support/in-process'
import { afterEach, describe, expect, it } from 'vitest'
import { SessionHost, type SessionHostOptions } from '../../src/host/index.js'

const dirs: string[] = []
afterEach(() => {
  // A session closed by a failed attach is released by the store in the background.
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 })
})

function text(answer: string): ScriptedResponse {
  return { role: 'assistant', content: [{ type: 'text', text: answer }], finishReason: 'stop' }
}

const noteCall: ScriptedResponse = {
  role: 'assistant',
  content: [{ type: 'tool-call', id: 'c1', name: 'note', arguments: { text: 'hi' } }],
  finishReason: 'tool-calls',
}

async function runtime(script: ScriptedResponse[], options: { persistence?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-host-'))
  dirs.push(dir)
  const persistence = options.persistence !== false
  // The persistence rows are the test's own, so their disposal (which waits for the store) is too.
  const fibers: Array<{ dispose(): unknown }> = []
  const { root } = await startInProcess({
    script,
    cwd: dir,
    before: (root) => {
      if (persistence) {
        fibers.push(root.plugin(JsonlSessionStore, { dir: join(dir, 'sessions') }))
        fibers.push(root.plugin(SessionPersistence))
        fibers.push(root.plugin(SessionQuery))
      }
      root.plugin(UserQuestionsService)
      root.plugin(CommandsService)
      root.plugin(builtinCommands)
    },
  })
  const written: string[] = []
  root.tools.register(
    defineTool<{ text: string }>({
      name: 'note',
      description: 'Writes a note (asks first).',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      execute: (args) => {
        written.push(args.text)
        return 'noted'
      },
    }),
  )
  root.on('tools/pre-execute', async (input, next) => (input.toolName === 'note' ? { action: 'ask' } : next()))
  const hosts: SessionHost[] = []
  const open = (options: Partial<SessionHostOptions> = {}) => {
    const host = new SessionHost(root, { name: 'the test host', closeReason: 'the test ended', cwd: dir, ...options })
    hosts.push(host)
    return host
  }
  return {
    root,
    dir,
    written,
    open,
    async [Symbol.asyncDispose]() {
      for (const host of hosts) await host.close()
      for (const fiber of fibers.reverse()) await fiber.dispose()
    },
  }
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
  } catch (error) {
    return HarnessError.is(error) ? error.code : String(error)
  }
  return undefined
}

describe('SessionHost', () => {
  it('creates, lists, releases and cold-resumes a session; the durable log holds the turn', async () => {
    await using rt = await runtime([text('first'), text('second')])
    const host = rt.open()
    const agent = await host.create()
    const id = agent.session.id
    expect(host.owns(agent.id)).toBe(true)
    agent.followup('hello')
    await agent.whenIdle()
    expect(await host.list()).toEqual([
      expect.objectContaining({ sessionId: id, cwd: rt.dir, title: 'hello', attached: true, status: 'idle' }),
    ])
    const length = agent.session.length
    await host.release(id)
    expect(rt.root.sessions.get(id)).toBeUndefined()
    expect(host.attached(id)).toBeUndefined()
    expect((await host.list())[0]).toMatchObject({
      sessionId: id,
      attached: false,
      status: 'detached',
      eventCount: length,
    })

    // Two resumes at once share one agent; the restored log is the one that was written.
    const [a, b] = await Promise.all([host.resume(id), host.resume(id)])
    expect(a).toBe(b)
    expect(a.session.length).toBe(length)
    a.followup('again')
    await a.whenIdle()
    await host.close()
    const stored = await rt.root.sessionQuery.read(id)
    const users = stored.events.filter((e) => e.type === 'user/message').length
    expect(users).toBe(2)
    expect(await codeOf(host.create())).toBe('SESSION_HOST_CLOSING')
  })

  it('refuses a session another owner drives (SESSION_BUSY) and an unattached one (SESSION_NOT_ATTACHED)', async () => {
    await using rt = await runtime([])
    const first = rt.open()
    const second = rt.open({ name: 'the other host' })
    const agent = await first.create()
    expect(await codeOf(second.resume(agent.session.id))).toBe('SESSION_BUSY')
    expect(() => second.agent(agent.session.id)).toThrow(/not open on the other host/)
    expect(await codeOf(second.resume('no-such-session'))).toBe('SESSION_NOT_FOUND')
  })

  it('says NO_PERSISTENCE when the profile cannot resume', async () => {
    await using rt = await runtime([], { persistence: false })
    const host = rt.open()
    expect(await codeOf(host.resume('x'))).toBe('NO_PERSISTENCE')
    expect(await codeOf(host.subscribe('x', 0, () => {}))).toBe('NO_PERSISTENCE')
  })

  it('forks a live session into an attached child that records its parent', async () => {
    await using rt = await runtime([text('one')])
    const host = rt.open()
    const agent = await host.create()
    agent.followup('hello')
    await agent.whenIdle()
    const child = await host.fork(agent.session.id)
    expect(child.session.header.parentSession).toBe(agent.session.id)
    expect(child.session.events.at(-1)?.type).toBe('session/end-seed')
    expect((await host.list()).map((row) => row.sessionId).sort()).toEqual([agent.session.id, child.session.id].sort())
  })

  it('delivers every event once from a baseline seq: baseline plus live equals the log', async () => {
    await using rt = await runtime([text('first'), text('second')])
    const host = rt.open()
    const agent = await host.create()
    agent.followup('one')
    await agent.whenIdle()
    const since = 2
    const live: number[] = []
    const subscription = await host.subscribe(agent.session.id, since, (event) => live.push(event.seq))
    expect(subscription.since).toBe(since)
    agent.followup('two')
    await agent.whenIdle()
    const seen = [...subscription.events.map((e) => e.seq), ...live]
    expect(seen).toEqual(agent.session.events.slice(since).map((e) => e.seq))
    subscription.dispose()
    agent.followup('three')
    await agent.whenIdle()
    expect(live.at(-1)).toBeLessThan(agent.session.length - 1)
  })

  it('holds an approval until the client answers; the tool runs only after allow-once', async () => {
    await using rt = await runtime([noteCall, text('done')])
    const requested: string[] = []
    const settled: string[] = []
    const host = rt.open({
      on: {
        approvalRequested: (pending) => requested.push(pending.id),
        approvalSettled: (id, answer) => settled.push(`${id}:${answer.decision}`),
      },
    })
    const agent = await host.create()
    agent.followup('write a note')
    while (host.approvals().length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    const [pending] = host.approvals()
    expect(pending?.question).toMatchObject({ sessionId: agent.session.id, toolCallId: 'c1', toolName: 'note' })
    expect(rt.written).toEqual([])
    host.respond(pending?.id as string, { decision: 'allowed-once' })
    await agent.whenIdle()
    expect(rt.written).toEqual(['hi'])
    expect(requested).toEqual([pending?.id])
    expect(settled).toEqual([`${pending?.id}:allowed-once`])
    expect(() => host.respond(pending?.id as string, { decision: 'rejected' })).toThrow(/no pending approval/)
  })

  it('cancels pending approvals when it closes, and the tool never runs', async () => {
    await using rt = await runtime([noteCall, text('done')])
    const host = rt.open()
    const agent = await host.create()
    const id = agent.session.id
    agent.followup('write a note')
    while (host.approvals().length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    await host.close()
    expect(rt.written).toEqual([])
    const stored = await rt.root.sessionQuery.read(id)
    expect(stored.events.filter((e) => e.type === 'approval/decided').map((e) => e.data)).toEqual([
      expect.objectContaining({ decision: 'cancelled' }),
    ])
  })

  it('answers approvals itself when given an answerer, holds none, and flushes a session it drives', async () => {
    await using rt = await runtime([noteCall, text('done')])
    const host = rt.open({ answerApprovals: createStaticAnswerer('allowed-once') })
    const agent = await host.create()
    agent.followup('write a note')
    await agent.whenIdle()
    expect(host.approvals()).toEqual([])
    expect(rt.written).toEqual(['hi'])
    expect(host.persistent).toBe(true)
    expect(await host.flush(agent.session.id)).toBe(true)
    const stored = await rt.root.sessionQuery.read(agent.session.id)
    expect(stored.events.filter((e) => e.type === 'approval/decided').map((e) => e.data)).toEqual([
      expect.objectContaining({ decision: 'allowed-once' }),
    ])
  })

  it('disposes per-session resources on release; a failing setup leaves nothing attached', async () => {
    await using rt = await runtime([])
    const host = rt.open()
    const log: string[] = []
    const agent = await host.create({
      setup: (created) => {
        log.push(`setup ${created.session.id}`)
        return () => log.push('disposed')
      },
    })
    expect(log).toEqual([`setup ${agent.session.id}`])
    await host.release(agent.session.id)
    expect(log).toEqual([`setup ${agent.session.id}`, 'disposed'])

    const before = rt.root.sessions.list().length
    const failing = host.create({
      setup: () => {
        throw new Error('the MCP server did not start')
      },
    })
    await expect(failing).rejects.toThrow(/did not start/)
    expect(host.agents()).toEqual([])
    expect(rt.root.sessions.list().length).toBe(before)
    expect(rt.root.agents.list()).toEqual([])
  })

  it('runs a /command for an attached session without a turn', async () => {
    await using rt = await runtime([])
    const host = rt.open()
    const agent = await host.create()
    expect(host.isCommand('/help')).toBe(true)
    expect(host.isCommand('hello')).toBe(false)
    const outcome = await host.command(agent.session.id, '/help')
    expect(outcome).toMatchObject({ ok: true, name: 'help' })
    expect(agent.session.events.some((e) => e.type === 'turn/start')).toBe(false)
    expect(await codeOf(host.command('not-attached', '/help'))).toBe('SESSION_NOT_ATTACHED')
  })
})
