// Todo, plan mode and goals through the real loop, written through the real JSONL persistence, then
// resumed by a fresh process-like root: the state comes back from the log alone, and the next request
// shows it to the model.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SystemPromptService } from '@dsh/agent/system-prompt'
import { defineTool } from '@dsh/agent/tools'
import BuiltinCommands from '@dsh/interaction/builtin-commands'
import { CommandsService } from '@dsh/interaction/commands'
import { Context } from '@dsh/kernel'
import type { AssistantMessage, ToolCallBlock } from '@dsh/llm'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import { eventData, type Session, SessionService } from '@dsh/session'
import { startInProcess, text } from '@dsh/test-support/in-process'
import { describe, expect, it } from 'vitest'
import { foldWorkState, renderWorkState, WorkStateService } from '../../src/work-state/index.js'
import workStateTools from '../../src/work-state/tools.js'

const call = (id: string, name: string, args: Record<string, unknown>): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'tool-call', id, name, arguments: args } satisfies ToolCallBlock],
  finishReason: 'tool-calls',
})

async function createRoot(dir: string, script: ScriptedResponse[]) {
  const { root, adapter } = await startInProcess({
    script,
    cwd: dir,
    sessionsDir: dir,
    approval: false,
    before: (root) => {
      root.plugin(CommandsService)
      root.plugin(BuiltinCommands)
      root.plugin(WorkStateService, { maxContinuations: 3 })
      root.plugin(workStateTools)
    },
  })
  const writes: string[] = []
  root.tools.register(
    defineTool<{ path: string }>({
      name: 'write',
      description: 'writes a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      presentation: (args) => ({ kind: 'diff', title: 'Write', path: args.path }),
      execute: (args) => {
        writes.push(args.path)
        return 'written'
      },
    }),
  )
  return { root, adapter, writes }
}

function results(session: Session): Array<{ text: string; code?: string }> {
  return eventData(session.events, 'tool/result').map((data) => ({
    text: data.message.content.find((block) => block.type === 'text')?.text ?? '',
    ...(data.code ? { code: data.code } : {}),
  }))
}

const todos = [
  { content: 'read the code', status: 'completed' },
  { content: 'write the fix', status: 'in_progress', priority: 'high' },
  { content: 'run the tests', status: 'pending' },
]

describe('work state', () => {
  it('todo, plan and goal state survive resume because they are folded from the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-work-state-'))
    try {
      const first = await createRoot(dir, [
        // turn 1: a todo list
        call('t1', 'todo_write', { todos }),
        text('listed'),
        // turn 2 (plan mode): a refused write, then a proposal nobody can answer yet
        call('w1', 'write', { path: 'a.txt' }),
        call('p1', 'exit_plan_mode', { plan: '1. edit a.txt\n2. run tests' }),
        text('waiting for approval'),
        // turn 3 (after /plan accept + /goal): work, one continuation, then goal_done
        call('w2', 'write', { path: 'a.txt' }),
        text('wrote a.txt'),
        call('g1', 'goal_done', { summary: 'a.txt is fixed' }),
        text('goal met'),
      ])
      const { root } = first
      const agent = await root.agents.create({ cwd: dir })
      const id = agent.session.id
      agent.followup('plan the fix')
      await agent.whenIdle()

      expect((await root.commands.dispatch('/plan', { session: agent.session, agent })).ok).toBe(true)
      agent.followup('go ahead')
      await agent.whenIdle()
      expect(first.writes).toEqual([])
      expect(results(agent.session).slice(1, 3)).toEqual([
        { text: expect.stringMatching(/PLAN_MODE: write changes things/), code: 'DENIED' },
        { text: expect.stringMatching(/^Plan recorded\. The user has to accept it/) },
      ])
      expect(root.workState.state(agent.session).plan).toEqual({ on: true, proposed: '1. edit a.txt\n2. run tests' })

      // The user accepts (which queues the plan as the next turn) and sets a goal.
      const accepted = await root.commands.dispatch('/plan accept', { session: agent.session })
      expect(accepted).toMatchObject({ ok: true, text: 'plan accepted; plan mode is off' })
      const goal = await root.commands.dispatch('/goal fix a.txt', { session: agent.session, agent })
      expect(goal).toMatchObject({ ok: true, text: 'goal set (at most 3 continuations): fix a.txt' })
      await agent.whenIdle()
      expect(first.writes).toEqual(['a.txt'])
      const state = root.workState.state(agent.session)
      expect(state.goal).toEqual({
        text: 'fix a.txt',
        status: 'met',
        continuations: 1,
        maxContinuations: 3,
        summary: 'a.txt is fixed',
        setAt: expect.any(Number),
      })
      // A second goal, set while idle, stays active across the restart.
      root.workState.setGoal(agent.session, 'keep the tests green', 1)
      root.workState.setPlanMode(agent.session, true, 'user')
      const before = root.workState.state(agent.session)
      root.invariants.assert()
      await agent.dispose()
      await root.sessions.flush()

      // A new root over the same directory: everything comes from the log.
      const second = await createRoot(dir, [call('w3', 'write', { path: 'b.txt' }), text('one'), text('two')])
      const resumed = await second.root.sessionPersistence.resume(id)
      const after = second.root.workState.state(resumed)
      expect(after).toEqual(before)
      expect(after).toEqual(foldWorkState(resumed.events))
      expect(after.todos).toEqual(todos)
      expect(after.plan.on).toBe(true)
      expect(after.goal).toMatchObject({ text: 'keep the tests green', status: 'active', continuations: 0 })

      const again = await second.root.agents.create({ session: resumed })
      again.followup('continue')
      await again.whenIdle()
      // The first request after resume shows the folded state as a context snapshot.
      const request = second.adapter.dispatches[0]?.request.messages ?? []
      const context = request
        .filter((message) => message.role === 'user')
        .map((message) => (message.content as Array<{ text?: string }>).map((b) => b.text ?? '').join(''))
        .filter((t) => t.startsWith('# Working state'))
        .at(-1)
      expect(context).toBe(renderWorkState(after))
      expect(context).toMatch(/Plan mode is ON/)
      expect(context).toMatch(/Goal \(active\): keep the tests green/)
      expect(context).toMatch(/\[x\] read the code\n\[>\] write the fix \(high\)\n\[ \] run the tests/)
      // Plan mode still refuses writes; the goal driver continues once, then its bound ends it.
      expect(second.writes).toEqual([])
      expect(results(resumed).at(-1)).toMatchObject({ code: 'DENIED' })
      expect(second.root.workState.state(resumed).goal).toMatchObject({ status: 'exhausted', continuations: 1 })
      const ends = eventData(resumed.events, 'turn/end').map((end) => end.reason)
      expect(ends.at(-1)).toBe('completed')
      second.root.invariants.assert()
      await again.dispose()
      await second.root.sessions.flush()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('decides what plan mode refuses by presentation and by the configured lists', async () => {
    const root = new Context()
    root.plugin(SessionService, { cwd: '/w' })
    root.plugin(SystemPromptService)
    await root.plugin(WorkStateService, { mutating: ['deploy'], readOnly: ['bash'] })
    const generic = { kind: 'generic', title: 'x' } as const
    expect(root.workState.isMutating({ toolName: 'read', presentation: generic })).toBe(false)
    expect(root.workState.isMutating({ toolName: 'deploy', presentation: generic })).toBe(true)
    expect(root.workState.isMutating({ toolName: 'edit', presentation: { kind: 'diff', title: 'e', path: 'a' } })).toBe(
      true,
    )
    expect(
      root.workState.isMutating({ toolName: 'bash', presentation: { kind: 'terminal', title: 'b', command: 'ls' } }),
    ).toBe(false)
    // Spawned children (header parentSession) follow their live parent's plan mode.
    const parent = root.sessions.create()
    const child = root.sessions.fork(parent, -1)
    expect(root.workState.inPlanMode(child.id)).toBe(false)
    root.workState.setPlanMode(parent, true, 'user')
    expect(root.workState.inPlanMode(child.id)).toBe(true)
    expect(() => root.workState.writeTodos(parent, [{ content: '', status: 'pending' }])).toThrow(/no content/)
    // A fork carries the parent's goal as context only: it is not the child's to drive or to mark.
    root.workState.setGoal(parent, 'ship the release')
    const forked = root.sessions.fork(parent)
    expect(root.workState.state(forked).goal).toMatchObject({ status: 'active', inherited: true })
    expect(renderWorkState(root.workState.state(forked))).toMatch(/Goal of the parent session \(context only/)
    expect(() => root.workState.endGoal(forked, 'met', 'model')).toThrow(/no active goal/)
    expect(root.workState.state(parent).goal?.inherited).toBeUndefined()
  })

  it('keeps only completed turns going, and a cleared goal stops the driver', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-goal-'))
    try {
      const { root, adapter } = await createRoot(dir, [
        { error: { code: 'BAD_REQUEST', message: 'refused' } },
        text('first try'),
        call('g0', 'goal_done', { summary: 'cannot be done', met: false }),
        text('gave up'),
        call('g1', 'goal_done', { summary: 'again' }),
        text('no goal left'),
      ])
      const agent = await root.agents.create({ cwd: dir })
      root.workState.setGoal(agent.session, 'make it work')
      agent.followup('start')
      await agent.whenIdle()
      // An error ends the turn as it is: no continuation on a failed turn.
      expect(root.workState.state(agent.session).goal).toMatchObject({ status: 'active', continuations: 0 })
      agent.followup('try again')
      await agent.whenIdle()
      expect(root.workState.state(agent.session).goal).toMatchObject({
        status: 'abandoned',
        continuations: 1,
        summary: 'cannot be done',
      })
      agent.followup('once more')
      await agent.whenIdle()
      expect(results(agent.session).at(-1)).toMatchObject({ code: 'GOAL_NONE' })
      expect(await root.commands.dispatch('/goal clear', { session: agent.session })).toMatchObject({
        ok: false,
        code: 'GOAL_NONE',
      })
      expect(adapter.dispatches).toHaveLength(6)
      await agent.dispose()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
