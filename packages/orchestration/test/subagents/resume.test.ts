// A crash while a child runs: the JSONL files as they were at that moment are all a new process gets.
// Resuming the parent must show the child's outcome honestly: interrupted / unknown, never success.
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { calls, createHarness, dataOf, isChild, latch, text, texts } from './harness.js'

it('a parent resumed after a crash shows its running child as interrupted, never as a success', async () => {
  const live = mkdtempSync(join(tmpdir(), 'dsh-sub-live-'))
  const disk = mkdtempSync(join(tmpdir(), 'dsh-sub-crash-'))
  try {
    const childRunning = latch()
    const first = await createHarness({
      dir: live,
      route: (dispatch) => {
        if (!isChild(dispatch)) return calls(['t1', 'task', { prompt: 'long work', description: 'long' }])
        childRunning.resolve()
        return new Promise(() => {})
      },
    })
    const parent = await first.root.agents.create()
    parent.followup('delegate the long work')
    await childRunning.promise
    const parentId = parent.session.id
    const childId = first.root.subagents.list()[0]?.childSession as string
    await first.root.sessions.flush()
    // The crash: copy the durable files (not the leases) as they are while the child runs.
    for (const name of readdirSync(live)) if (name.endsWith('.jsonl')) copyFileSync(join(live, name), join(disk, name))
    await parent.dispose()

    const second = await createHarness({ dir: disk, route: () => text('the delegated work may not have happened') })
    const resumed = await second.root.sessionPersistence.resume(parentId)
    const [result] = dataOf(resumed, 'tool/result')
    expect(result?.code).toBe('TOOL_OUTCOME_UNKNOWN')
    const finished = dataOf(resumed, 'subagent/finished')
    expect(finished).toEqual([
      {
        subagentId: childId,
        childSession: childId,
        run: 0,
        outcome: 'interrupted',
        text: '',
        message: expect.stringMatching(/outcome is unknown/),
        synthetic: true,
      },
    ])
    expect(second.root.subagents.records(resumed)).toMatchObject([
      { subagentId: childId, status: 'closed', runs: 1, last: { outcome: 'interrupted', synthetic: true } },
    ])

    // The model's next request shows the unknown outcome of the delegation.
    const agent = await second.root.agents.create({ session: resumed })
    agent.followup('what happened to the long work?')
    await agent.whenIdle()
    const request = second.adapter.dispatches[0]?.request.messages ?? []
    expect(request.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'user'])
    const tool = request[2] as { isError: boolean; content: Array<{ text: string }> }
    expect(tool.isError).toBe(true)
    expect(tool.content[0]?.text).toMatch(/TOOL_OUTCOME_UNKNOWN/)

    // The child's own session is durable, names its parent, and resumes closed as interrupted.
    const child = await second.root.sessionPersistence.resume(childId)
    expect(child.header.parentSession).toBe(parentId)
    expect(dataOf(child, 'turn/end').map((d) => d.reason)).toEqual(['interrupted'])

    // The closers are durable facts: a second resume adds nothing.
    await second.root.sessions.flush()
    const reread = await second.root.sessionPersistence.read(parentId)
    expect(dataOf(reread, 'subagent/finished')).toHaveLength(1)
    expect(dataOf(reread, 'subagent/closed')).toHaveLength(1)
    await agent.dispose()
  } finally {
    rmSync(live, { recursive: true, force: true })
    rmSync(disk, { recursive: true, force: true })
  }
})

it('a kept child closed by a restart is reopened from its durable session by subagent_send', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-sub-reopen-'))
  try {
    const childSays = (dispatch: Parameters<typeof isChild>[0]) =>
      text(
        `child knows: ${dispatch.request.messages
          .filter((message) => message.role === 'user')
          .map((message) => (message.content as Array<{ text?: string }>).map((b) => b.text ?? '').join(''))
          .join(' / ')}`,
      )
    const first = await createHarness({
      dir,
      route: (dispatch) => {
        if (isChild(dispatch)) return childSays(dispatch)
        return dispatch.request.messages.some((m) => m.role === 'tool')
          ? text('kept it')
          : calls(['k1', 'task', { prompt: 'remember 42', keep: true }])
      },
    })
    const parent = await first.root.agents.create({ cwd: dir })
    parent.followup('start a helper')
    await parent.whenIdle()
    const parentId = parent.session.id
    const [record] = first.root.subagents.records(parent.session)
    const id = record?.subagentId as string
    // Input still queued in the child when its owner goes belongs to the old activation: never re-run.
    first.root.subagents.get(id)?.agent?.inject('stale input')
    await parent.dispose()
    await first.root.sessions.flush()

    const second = await createHarness({
      dir,
      route: (dispatch) => {
        if (isChild(dispatch)) return childSays(dispatch)
        const last = texts(dispatch).at(-1) ?? ''
        if (last === 'ask the helper again') {
          return calls(['k2', 'subagent_send', { subagent_id: id, message: 'what did I ask first?' }])
        }
        return text('done')
      },
    })
    const resumed = await second.root.sessionPersistence.resume(parentId)
    expect(second.root.subagents.records(resumed)).toMatchObject([
      { subagentId: id, status: 'closed', reopenable: true },
    ])
    const again = await second.root.agents.create({ session: resumed })
    again.followup('ask the helper again')
    await again.whenIdle()
    const result = dataOf(resumed, 'tool/result').at(-1)
    expect(result?.message.content.find((b) => b.type === 'text')?.text).toMatch(
      /run 1 completed.*\nchild knows: remember 42 \/ what did I ask first\?\n/s,
    )
    expect(dataOf(resumed, 'subagent/reopened')).toEqual([{ subagentId: id, childSession: id }])
    await again.dispose()
    await second.root.sessions.flush()
    const records = second.root.subagents.records(await second.root.sessionPersistence.read(parentId))
    expect(records).toMatchObject([{ subagentId: id, runs: 2, last: { run: 1, outcome: 'completed' } }])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
