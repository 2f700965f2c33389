// ctx.commands and ctx.userQuestions through a real in-process dsh with the scripted model.
import { type Context, Service } from '@dsh/kernel'
import type { AssistantMessage } from '@dsh/llm'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import { eventData, type Session } from '@dsh/session'
import { startInProcess, text } from '@dsh/test-support/in-process'
import SandboxPolicy from '@dsh/world/sandbox/policy'
import { describe, expect, it } from 'vitest'
import askUser from '../src/ask-user.js'
import builtin from '../src/builtin-commands.js'
import { CommandsService, literalSlash, parseCommand } from '../src/commands.js'
import { UserQuestionsService } from '../src/questions.js'

const ask = (question: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'tool-call', id: 'q1', name: 'ask_user', arguments: { question, options: ['red', 'blue'] } }],
  finishReason: 'tool-calls',
})

async function createRoot(script: ScriptedResponse[] = [], extra?: (root: Context) => void) {
  return startInProcess({
    script,
    invariants: false,
    before: (root) => {
      root.plugin(CommandsService)
      root.plugin(builtin)
      root.plugin(UserQuestionsService)
      root.plugin(askUser)
      extra?.(root)
    },
  })
}

function lastResult(session: Session): { text: string; isError: boolean; code?: string } {
  const data = eventData(session.events, 'tool/result').at(-1)
  if (!data) throw new Error('no tool/result in the session')
  return {
    text: data.message.content.find((block) => block.type === 'text')?.text ?? '',
    isError: data.message.isError,
    ...(data.code ? { code: data.code } : {}),
  }
}

describe('commands', () => {
  it('parses, lists and reports unknown or invalid commands as outcomes', async () => {
    const { root } = await createRoot()
    expect(parseCommand('/model  deepseek:chat ')).toEqual({ name: 'model', args: 'deepseek:chat' })
    expect(parseCommand('hello /model')).toBeUndefined()
    expect(root.commands.isCommand('/help')).toBe(true)
    expect(root.commands.isCommand('/nope')).toBe(false)
    expect(await root.commands.dispatch('/nope')).toMatchObject({ ok: false, code: 'COMMAND_UNKNOWN' })
    expect(await root.commands.dispatch('plain text')).toMatchObject({ ok: false, code: 'COMMAND_INVALID' })
    const help = await root.commands.dispatch('/help')
    expect(help.text.split('\n').map((line) => line.split(' ')[0])).toEqual([
      ...['/clear', '/compact', '/cost', '/diff', '/exit', '/fork', '/help', '/init', '/mcp', '/model', '/new'],
      ...['/permissions', '/quit', '/status', '/usage', 'Start'],
    ])
    // Any /word goes to dispatch (an unknown one is answered); `//` and `\\/` are literal slash text.
    expect(root.commands.routesToCommand('/nope now')).toBe(true)
    expect(root.commands.routesToCommand('/etc/hosts is broken')).toBe(false)
    expect(literalSlash('//tmp is full')).toBe('/tmp is full')
    expect(literalSlash('\\/tmp')).toBe('/tmp')
    expect(literalSlash('/tmp')).toBeUndefined()
    expect((await root.commands.dispatch('/nope')).text).toMatch(/^unknown command \/nope \(see \/help\)/)
    expect(() => root.commands.register({ name: 'help', description: 'x', run: () => 'x' })).toThrow(
      /already registered/,
    )
    expect(await root.commands.dispatch('/model')).toMatchObject({ ok: false, code: 'COMMAND_NEEDS_AGENT' })
  })

  it('/model changes the model of the next requests, recorded in request/header', async () => {
    const { root, adapter } = await createRoot([text('a'), text('b')])
    const agent = await root.agents.create()
    agent.followup('one')
    await agent.whenIdle()
    const submitted = await root.commands.submit('/model scripted:bigger', { agent, session: agent.session })
    expect(submitted).toMatchObject({
      kind: 'command',
      outcome: { ok: true, text: 'model: scripted:bigger (from the next request)' },
    })
    expect(await root.commands.submit('two', { agent, session: agent.session })).toMatchObject({ kind: 'message' })
    await agent.whenIdle()
    expect(adapter.dispatches.map((d) => d.call.model)).toEqual(['scripted', 'bigger'])
    const _headers = agent.session.events.filter((e) => e.type === 'request/header')
    expect(eventData(agent.session.events, 'request/header').at(-1)?.config.model).toBe('bigger')
    await agent.dispose()
  })

  it('/permissions, /fork and /compact act without a model turn', async () => {
    const compacted: string[] = []
    class FakeCompaction extends Service {
      static readonly provide = 'compaction'
      constructor(ctx: Context) {
        super(ctx, 'compaction')
      }
      async compact(session: Session) {
        compacted.push(session.id)
        return { ok: true, trigger: 'manual', summarySeq: 9, start: 0, end: 3 }
      }
    }
    const { root, adapter } = await createRoot([text('hello')])
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    const target = { agent, session: agent.session }

    expect(await root.commands.dispatch('/compact', target)).toMatchObject({ ok: false, code: 'COMMAND_UNAVAILABLE' })
    const fiber = root.plugin(FakeCompaction)
    await fiber
    expect(await root.commands.dispatch('/compact', target)).toMatchObject({ ok: true, data: { summarySeq: 9 } })
    expect(compacted).toEqual([agent.session.id])
    await fiber.dispose()

    expect(await root.commands.dispatch('/permissions never', target)).toMatchObject({
      ok: true,
      text: 'approval: never',
    })
    expect(root.approval.policy(agent.session.id)).toBe('never')

    const fork = await root.commands.dispatch('/fork', target)
    expect(fork).toMatchObject({ ok: true, data: { parentSession: agent.session.id, durable: false } })
    const child = root.sessions.list().find((session) => session.header.parentSession === agent.session.id)
    expect(child?.header.seedLength).toBe(agent.session.length)
    expect(adapter.dispatches).toHaveLength(1)
    await agent.dispose()
  })
  it('/cost folds the log per model: tokens by kind, cache hits, unknown price, not the fork seed', async () => {
    const answer = (words: string): AssistantMessage => ({
      ...text(words),
      usage: { inputTokens: 1000, outputTokens: 100, totalTokens: 1100, cacheHitTokens: 250, reasoningTokens: 40 },
    })
    const { root } = await createRoot([answer('one'), answer('two')])
    const agent = await root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    agent.followup('again')
    await agent.whenIdle()
    const target = { agent, session: agent.session }
    const cost = await root.commands.dispatch('/cost', target)
    expect(cost).toMatchObject({
      ok: true,
      data: { requests: 2, unknownRequests: 2, usd: 0, cost: 'unknown', inheritedRequests: 0 },
    })
    const data = cost.data
    const models = data && typeof data === 'object' && !Array.isArray(data) ? data.models : undefined
    const [row] = Array.isArray(models) ? models : []
    expect(row).toMatchObject({ inputTokens: 2000, cacheHitTokens: 500, outputTokens: 200, reasoningTokens: 80 })
    // The scripted model has no price: the figure is 'unknown', never $0.
    expect(cost.text).toContain('25% cache hits')
    expect(cost.text).not.toContain('$0')
    // Each response in the log carries its (unknown) cost.
    expect(eventData(agent.session.events, 'assistant/message').map((data) => data.cost)).toEqual([{}, {}])
    // A fork's copied requests were paid by the parent.
    await root.commands.dispatch('/fork', target)
    const child = root.sessions.list().find((session) => session.header.parentSession === agent.session.id)
    const inChild = await root.commands.dispatch('/cost', { session: child })
    expect(inChild).toMatchObject({ ok: true, data: { requests: 0, inheritedRequests: 2 } })
    await agent.dispose()
  })
  it('/permissions switches the sandbox preset durably when the sandbox policy row is active', async () => {
    const { root } = await createRoot([], (r) => r.plugin(SandboxPolicy, { mode: 'workspace-write' }))
    const session = root.sessions.create()
    const shown = await root.commands.dispatch('/permissions', { session })
    expect(shown.text.split('\n')[0]).toBe('sandbox: workspace-write')
    const changed = await root.commands.dispatch('/permissions danger-full-access', { session })
    expect(changed.text.split('\n')).toEqual([
      'sandbox: danger-full-access',
      expect.stringMatching(/^presets: /),
      'approval: never',
    ])
    expect(session.events.map((e) => [e.type, e.data])).toEqual([
      ['sandbox/mode', { mode: 'danger-full-access', network: 'on' }],
    ])
    expect(await root.commands.dispatch('/permissions sideways', { session })).toMatchObject({ ok: false })
  })
})

describe('user questions', () => {
  it('ask_user without an answerer gives the model a readable unavailable result', async () => {
    const { root } = await createRoot([ask('which colour?'), text('I will pick red')])
    const agent = await root.agents.create()
    agent.followup('paint it')
    await agent.whenIdle()
    expect(lastResult(agent.session)).toMatchObject({
      isError: true,
      code: 'USER_UNAVAILABLE',
      text: expect.stringMatching(/^USER_UNAVAILABLE: no surface can answer .* decide yourself/),
    })
    await agent.dispose()
  })

  it('a surface answerer answers, and an answerer failure fails closed', async () => {
    const { root } = await createRoot([ask('which colour?'), text('blue it is'), ask('again?'), text('ok')])
    const seen: string[] = []
    const stop = root.userQuestions.answer((question) => {
      seen.push(`${question.question} [${question.options?.join('/')}] ${question.toolCallId}`)
      return 'blue'
    })
    const agent = await root.agents.create()
    agent.followup('paint it')
    await agent.whenIdle()
    expect(seen).toEqual(['which colour? [red/blue] q1'])
    expect(lastResult(agent.session)).toEqual({ text: 'The user answered: blue', isError: false })
    stop()
    root.userQuestions.answer(() => {
      throw new Error('socket closed')
    })
    agent.followup('again')
    await agent.whenIdle()
    expect(lastResult(agent.session)).toMatchObject({
      code: 'USER_UNAVAILABLE',
      text: expect.stringMatching(/socket closed/),
    })
    await agent.dispose()
  })

  it('cancelling the turn cancels a pending question', async () => {
    const { root } = await createRoot([ask('still there?')])
    let asked!: () => void
    const waiting = new Promise<void>((resolve) => {
      asked = resolve
    })
    root.userQuestions.answer((_question, signal) => {
      asked()
      return new Promise((resolve) => signal.addEventListener('abort', () => resolve('too late')))
    })
    const agent = await root.agents.create()
    agent.followup('ask me')
    await waiting
    await agent.cancel('stop')
    expect(lastResult(agent.session)).toMatchObject({ code: 'USER_QUESTION_CANCELLED' })
    await agent.dispose()
  })
})
