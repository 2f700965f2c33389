// A crash while a child runs: the JSONL files as they were at that moment are all a new process gets.
// Resuming the parent must show the child's outcome honestly: interrupted / unknown, never success.
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import type { SubagentFinishedData } from '../src/index.js'
import { calls, createHarness, dataOf, isChild, latch, text } from './harness.js'

type ToolResultData = {
  message: { toolCallId: string; isError: boolean; content: Array<{ text: string }> }
  code?: string
}

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
    const [result] = dataOf<ToolResultData>(resumed, 'tool/result')
    expect(result?.code).toBe('TOOL_OUTCOME_UNKNOWN')
    const finished = dataOf<SubagentFinishedData>(resumed, 'subagent/finished')
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
    expect(dataOf<{ reason: string }>(child, 'turn/end').map((d) => d.reason)).toEqual(['interrupted'])

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
