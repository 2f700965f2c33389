// Cancelling a running workflow cancels every child it runs: no live subagent remains, each child's
// turn ended aborted in its own log, the model requests were closed, and the parent's log says so.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { dataOf } from '@dsh/test-support/in-process'
import { expect, it } from 'vitest'
import { createHarness, isChild, removeDir } from './harness.js'

it('cancel mid-workflow leaves no running child', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-wf-cancel-'))
  const harness = await createHarness({
    cwd: dir,
    // Children never answer; the parent is not asked in this test.
    respond: (request) => (isChild(request) ? { type: 'hang' } : completionResponse({ text: 'unused' })),
  })
  const { root, server } = harness
  try {
    const parent = await root.agents.create()
    const running = root.workflows.start(parent, {
      steps: [
        { id: 'fan', forEach: ['a', 'b', 'c'], prompt: 'work on {{item}}' },
        { id: 'merge', prompt: 'merge {{steps.fan}}' },
      ],
    })
    await server.waitForRequests(3, 30_000)
    expect(root.subagents.list(parent.session.id)).toHaveLength(3)
    expect(await root.workflows.cancel(running.workflowId)).toBe(true)
    const result = await running.done
    expect(result.outcome).toBe('cancelled')
    expect(root.subagents.list()).toEqual([])
    expect(root.workflows.running(parent.session.id)).toEqual([])
    for (let index = 0; index < 3; index++) await server.waitForCancel(index)
    const tasks = dataOf(parent.session, 'workflow/task-started')
    expect(tasks).toHaveLength(3)
    for (const task of tasks) {
      await root.sessions.flush()
      const child = await root.sessionPersistence.read(task.childSession)
      expect(dataOf(child, 'turn/end').map((end) => end.reason)).toEqual(['aborted'])
    }
    expect(dataOf(parent.session, 'workflow/finished')).toMatchObject([{ outcome: 'cancelled' }])
    // The merge step never started.
    expect(server.requests).toHaveLength(3)
    await parent.dispose()
  } finally {
    await harness.close()
    await removeDir(dir)
  }
})

it('refuses a bad plan before anything runs, naming each problem', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-wf-plan-'))
  const harness = await createHarness({ cwd: dir, respond: () => completionResponse({ text: 'unused' }) })
  try {
    const parent = await harness.root.agents.create()
    expect(() =>
      harness.root.workflows.start(parent, {
        steps: [{ id: 'a', prompt: 'use {{steps.b}} and {{item}}' }, { id: 'a' }],
      }),
    ).toThrow(/not an earlier step.*\{\{item\}\} but the step has no forEach.*used twice.*prompt must be/)
    expect(dataOf(parent.session, 'workflow/started')).toEqual([])
    expect(harness.server.requests).toEqual([])
    await parent.dispose()
  } finally {
    await harness.close()
    await removeDir(dir)
  }
})
