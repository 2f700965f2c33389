// Subagents through the real loop and a routed model: parallel children whose reports the parent
// merges, a fork that sees the parent's prefix, cancellation from the parent, the depth limit, the tool
// filter, and continuable children.

import { defineTool } from '@dsh/agent/tools'
import type { LlmDispatch } from '@dsh/llm'
import { describe, expect, it } from 'vitest'
import { calls, createHarness, dataOf, isChild, lastText, latch, text, texts } from './harness.js'

describe('subagents', () => {
  it('runs two children in parallel and the parent merges their reports', async () => {
    const bothAsked = latch()
    let asked = 0
    const { root, adapter } = await createHarness({
      route: async (dispatch) => {
        if (isChild(dispatch)) {
          if (++asked === 2) bothAsked.resolve()
          // Each child waits until the other one is running too: the two run at the same time.
          await bothAsked.promise
          return text(lastText(dispatch).includes('apples') ? 'apples: 3' : 'pears: 5')
        }
        const results = dispatch.request.messages.filter((message) => message.role === 'tool')
        if (results.length === 0) {
          return calls(
            ['t1', 'task', { prompt: 'count the apples', description: 'apples' }],
            ['t2', 'task', { prompt: 'count the pears', description: 'pears' }],
          )
        }
        return text(`merged: ${texts(dispatch).slice(-2).join(' | ')}`)
      },
    })
    root.tools.register(
      defineTool({
        name: 'ask_user',
        description: 'stand-in',
        parameters: { type: 'object' },
        execute: () => 'x',
      }),
    )
    const parent = await root.agents.create()
    parent.followup('count the fruit')
    await parent.whenIdle()

    const final = dataOf(parent.session, 'assistant/message').at(-1)
    expect(final?.message.content.find((b) => b.type === 'text')?.text).toMatch(/^merged: .*apples: 3.* \| .*pears: 5/s)
    const started = dataOf(parent.session, 'subagent/started')
    const finished = dataOf(parent.session, 'subagent/finished')
    expect(started.map((s) => [s.provider, s.mode, s.depth, s.callId, s.description])).toEqual([
      ['spawn', 'one-shot', 1, 't1', 'apples'],
      ['spawn', 'one-shot', 1, 't2', 'pears'],
    ])
    expect(finished.map((f) => [f.outcome, f.text]).sort()).toEqual([
      ['completed', 'apples: 3'],
      ['completed', 'pears: 5'],
    ])
    expect(dataOf(parent.session, 'subagent/closed')).toHaveLength(2)

    // The children: fresh sessions recording their parent, with the persona and without denied tools.
    const children = adapter.dispatches.filter(isChild)
    expect(children).toHaveLength(2)
    for (const child of children) {
      expect(child.request.messages.map((m) => m.role)).toEqual(['user'])
      expect(child.request.tools?.map((tool) => tool.name)).not.toContain('ask_user')
      expect(child.request.tools?.map((tool) => tool.name)).toContain('task')
    }
    const parentRequest = adapter.dispatches[0] as LlmDispatch
    expect(parentRequest.request.tools?.map((tool) => tool.name)).toContain('ask_user')
    expect(root.subagents.list()).toEqual([])
    root.invariants.assert()
    await parent.dispose()
  })

  it('forks a child that sees the parent up to its last closed turn', async () => {
    let childMessages: string[] = []
    const { root } = await createHarness({
      route: (dispatch) => {
        if (isChild(dispatch)) {
          childMessages = texts(dispatch)
          return text(childMessages.some((t) => t.includes('heron')) ? 'the word is heron' : 'no idea')
        }
        const last = lastText(dispatch)
        if (last === 'remember: the secret word is heron') return text('noted')
        if (last === 'ask a fork for the word') {
          return calls(['f1', 'task', { prompt: 'what is the secret word?', provider: 'fork' }])
        }
        return text(`fork said: ${last}`)
      },
    })
    const parent = await root.agents.create()
    parent.followup('remember: the secret word is heron')
    await parent.whenIdle()
    parent.followup('ask a fork for the word')
    await parent.whenIdle()

    expect(childMessages).toEqual(['remember: the secret word is heron', 'noted', 'what is the secret word?'])
    const [started] = dataOf(parent.session, 'subagent/started')
    expect(started?.provider).toBe('fork')
    // A later fork of the parent carries the parent's subagent events in its seed, but not as its own.
    const later = root.sessions.fork(parent.session)
    expect(root.subagents.records(later)).toEqual([])
    expect(root.subagents.records(parent.session)).toHaveLength(1)
    const result = dataOf(parent.session, 'tool/result')[0]
    expect(result?.message.isError).toBe(false)
    expect(result?.message.content.find((b) => b.type === 'text')?.text).toMatch(
      /completed; child session .*\nthe word is heron$/,
    )
    root.invariants.assert()
    await parent.dispose()
  })

  it('records the child session durably with parentSession and seedLength', async () => {
    const seen: Array<{ parentSession?: string; seedLength?: number; types: string[] }> = []
    const { root } = await createHarness({
      route: (dispatch) => {
        if (isChild(dispatch)) return text('done')
        return lastText(dispatch) === 'go' ? calls(['s1', 'task', { prompt: 'do it' }]) : text('ok')
      },
    })
    root.on('subagent/finished', (report) => {
      const child = root.sessions.get(report.childSession)
      if (child) {
        seen.push({
          parentSession: child.header.parentSession,
          seedLength: child.header.seedLength,
          types: child.events.map((event) => event.type).filter((type) => type !== 'assistant/chunk'),
        })
      }
    })
    const parent = await root.agents.create()
    parent.followup('go')
    await parent.whenIdle()
    expect(seen).toHaveLength(1)
    expect(seen[0]?.parentSession).toBe(parent.session.id)
    expect(seen[0]?.seedLength).toBe(0)
    expect(seen[0]?.types.slice(0, 3)).toEqual(['session/end-seed', 'agent/inbox/spliced', 'turn/start'])
    expect(seen[0]?.types.at(-1)).toBe('turn/end')
    await parent.dispose()
  })

  it('cancelling the parent cancels its running children', async () => {
    const childRunning = latch()
    const { root } = await createHarness({
      route: (dispatch) => {
        if (isChild(dispatch)) {
          childRunning.resolve()
          return new Promise(() => {}) // never answers: only an abort ends it
        }
        return calls(['c1', 'task', { prompt: 'work forever' }])
      },
    })
    const parent = await root.agents.create()
    parent.followup('start the long task')
    await childRunning.promise
    const [child] = root.subagents.list(parent.session.id)
    expect(child?.status).toBe('running')
    const childAgent = child?.agent
    if (!childAgent) throw new Error('the child has no in-process agent')
    await parent.cancel('the user pressed stop')

    expect(dataOf(parent.session, 'turn/end').map((d) => d.reason)).toEqual(['aborted'])
    const [finished] = dataOf(parent.session, 'subagent/finished')
    expect(finished?.outcome).toBe('cancelled')
    expect(finished?.reason).toBe('aborted')
    const [result] = dataOf(parent.session, 'tool/result')
    expect(result?.message.isError).toBe(true)
    expect(result?.message.content.find((b) => b.type === 'text')?.text).toMatch(/cancelled \(aborted\)/)
    expect(childAgent.disposed).toBe(true)
    expect(dataOf(childAgent.session, 'turn/end').map((d) => d.reason)).toEqual(['aborted'])
    expect(root.subagents.list()).toEqual([])
    await parent.dispose()
  })

  it('enforces the depth limit', async () => {
    const childTools: string[][] = []
    const { root } = await createHarness({
      subagents: { maxDepth: 1 },
      route: (dispatch) => {
        const last = lastText(dispatch)
        if (isChild(dispatch)) {
          childTools.push((dispatch.request.tools ?? []).map((tool) => tool.name))
          // Called anyway (the model does not see it): refused before anything starts.
          if (last === 'delegate further') return calls(['g1', 'task', { prompt: 'grandchild work' }])
          return text(`child saw: ${last}`)
        }
        return last === 'go' ? calls(['p1', 'task', { prompt: 'delegate further' }]) : text('done')
      },
    })
    const parent = await root.agents.create()
    parent.followup('go')
    await parent.whenIdle()
    expect(childTools[0]).not.toContain('task')
    expect(childTools[0]).toContain('subagent_list')
    const [report] = dataOf(parent.session, 'subagent/finished')
    expect(report?.outcome).toBe('completed')
    expect(report?.text).toMatch(/^child saw: .*not available to this agent/s)
    expect(dataOf(parent.session, 'subagent/started')).toHaveLength(1)

    // The service refuses it whatever the tools say.
    const child = await root.agents.create()
    root.subagents.depths.set(child.id, 1)
    await expect(root.subagents.start({ parent: child, prompt: 'x' })).rejects.toMatchObject({
      code: 'SUBAGENT_DEPTH_EXCEEDED',
    })
    await child.dispose()
    await parent.dispose()
  })

  it('refuses tools outside the child filter even when the child calls them', async () => {
    let ran = 0
    const { root } = await createHarness({
      route: (dispatch) => {
        const last = lastText(dispatch)
        if (isChild(dispatch)) {
          if (last === 'use the tool') return calls(['x1', 'probe', {}])
          return text(`child: ${last}`)
        }
        return last === 'go' ? calls(['p1', 'task', { prompt: 'use the tool', tools: ['read_only'] }]) : text('done')
      },
    })
    root.tools.register(
      defineTool({
        name: 'probe',
        description: 'mutates',
        parameters: { type: 'object' },
        execute: () => {
          ran++
          return 'ran'
        },
      }),
    )
    const parent = await root.agents.create()
    parent.followup('go')
    await parent.whenIdle()
    expect(ran).toBe(0)
    const [report] = dataOf(parent.session, 'subagent/finished')
    expect(report?.text).toMatch(/not available to this agent/)
    await parent.dispose()
  })

  it('never asks a person on behalf of a child: its approval policy is never', async () => {
    const asked: string[] = []
    const { root } = await createHarness({
      route: (dispatch) => {
        const last = lastText(dispatch)
        if (isChild(dispatch)) return last === 'probe it' ? calls(['x1', 'probe', {}]) : text(`child: ${last}`)
        if (last === 'go') return calls(['p0', 'probe', {}])
        if (last === 'probed') return calls(['p1', 'task', { prompt: 'probe it' }])
        return text('done')
      },
    })
    root.tools.register(
      defineTool({ name: 'probe', description: 'asks', parameters: { type: 'object' }, execute: () => 'probed' }),
    )
    root.on('tools/pre-execute', async (call, next) => (call.toolName === 'probe' ? { action: 'ask' } : next()))
    root.approval.answer((question) => {
      asked.push(question.sessionId ?? '')
      return 'allowed-once'
    })
    const parent = await root.agents.create()
    parent.followup('go')
    await parent.whenIdle()
    expect(asked).toEqual([parent.session.id])
    const [report] = dataOf(parent.session, 'subagent/finished')
    expect(report?.text).toMatch(/^child: Tool "probe" was not run: .*never asks for approval/)
    expect(root.approval.policy(report?.childSession)).toBe('ask') // released with the child
    await parent.dispose()
  })

  it('keeps a continuable child whose follow-ups queue as new turns', async () => {
    const { root } = await createHarness({
      route: (dispatch) => {
        const last = lastText(dispatch)
        if (isChild(dispatch))
          return text(`child turn ${dispatch.request.messages.filter((m) => m.role === 'user').length}: ${last}`)
        if (last === 'go') return calls(['k1', 'task', { prompt: 'first', keep: true }])
        const id = /subagent_id "([^"]+)"/.exec(texts(dispatch).join('\n'))?.[1]
        if (last.includes('third')) return calls(['k4', 'subagent_list', {}])
        if (last.includes('continuable')) return calls(['k5', 'subagent_close', { subagent_id: id }])
        if (last.includes('subagent_id')) {
          return calls(
            ['k2', 'subagent_send', { subagent_id: id, message: 'second' }],
            ['k3', 'subagent_send', { subagent_id: id, message: 'third' }],
          )
        }
        return text('finished')
      },
    })
    const parent = await root.agents.create()
    parent.followup('go')
    await parent.whenIdle()
    const results = dataOf(parent.session, 'tool/result').map(
      (r) => r.message.content.find((b) => b.type === 'text')?.text ?? '',
    )
    expect(results[0]).toMatch(/run 0 completed.*\nchild turn 1: first\n/s)
    expect(results[1]).toMatch(/run 1 completed.*\nchild turn 2: second/s)
    expect(results[2]).toMatch(/run 2 completed.*\nchild turn 3: third/s)
    expect(results[3]).toMatch(/ spawn continuable idle runs=3 last=completed$/)
    expect(results[4]).toMatch(/closed$/)
    const records = root.subagents.records(parent.session)
    expect(records.map((r) => [r.status, r.runs, r.last?.outcome])).toEqual([['closed', 3, 'completed']])
    expect(dataOf(parent.session, 'subagent/message').map((m) => (m as { run: number }).run)).toEqual([1, 2])
    root.invariants.assert()
    await parent.dispose()
  })

  it('a follow-up sent without waiting reports back as context of a later step', async () => {
    const reported = latch()
    const { root, adapter } = await createHarness({
      route: (dispatch) => {
        const last = lastText(dispatch)
        if (isChild(dispatch)) return text(`child: ${last}`)
        if (texts(dispatch).includes('what came back?')) return text('noted')
        if (last === 'go') return calls(['k1', 'task', { prompt: 'first', keep: true }])
        if (last.includes('subagent_id "')) {
          const id = /subagent_id "([^"]+)"/.exec(last)?.[1]
          return calls(['k2', 'subagent_send', { subagent_id: id, message: 'later', wait: false }])
        }
        return text(`parent: ${last.split('\n')[0]}`)
      },
    })
    root.on('subagent/finished', (report) => {
      if (report.run === 1) reported.resolve()
    })
    const parent = await root.agents.create()
    parent.followup('go')
    await parent.whenIdle()
    await reported.promise
    await new Promise((resolve) => setTimeout(resolve, 0))
    parent.followup('what came back?')
    await parent.whenIdle()
    const last = adapter.dispatches.filter((d) => !isChild(d)).at(-1)
    // The report was injected (no wake) and rides along with the next turn's first step.
    const seen = last ? texts(last).slice(-2) : []
    expect(seen[0]).toBe('what came back?')
    expect(seen[1]).toMatch(/^\[subagent .* run 1 completed;.*\nchild: later\n/s)
    await parent.dispose()
  })
})
