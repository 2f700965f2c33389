// A workflow step's `preset` is applied: the child of a `plan` step is offered plan's tools only (read
// yes, write no), a step without one gets the parent's tools, and each child's log records its preset.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool } from '@dsh/agent/tools'
import type { RecordedRequest } from '@dsh/test-support'
import { completionResponse } from '@dsh/test-support'
import { dataOf } from '@dsh/test-support/in-process'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { createHarness, type Harness, isChild, removeDir, taskOf } from './harness.js'

let dir: string
let harness: Harness

const toolsOf = (request: RecordedRequest) =>
  ((request.body.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name).sort()

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-wf-preset-'))
  harness = await createHarness({
    cwd: dir,
    presets: true,
    respond: (request) =>
      isChild(request) ? completionResponse({ text: `did: ${taskOf(request)}` }) : completionResponse({ text: 'ok' }),
    after: (root) => {
      for (const name of ['read', 'write']) {
        root.tools.register(
          defineTool({ name, description: name, parameters: { type: 'object' }, execute: () => 'ok' }),
        )
      }
    },
  })
})
afterEach(async () => {
  await harness.close()
  await removeDir(dir)
})

it('a step with preset plan gets plan’s tool set; a step without one gets the parent’s', async () => {
  const parent = await harness.root.agents.create()
  const children: Array<{ id: string; session: import('@dsh/session').Session }> = []
  harness.root.on('agent/created', (agent) => {
    if (agent.id.startsWith('sub-')) children.push(agent)
  })
  const running = harness.root.workflows.start(parent, {
    steps: [
      { id: 'investigate', prompt: 'investigate the bug', preset: 'plan' },
      { id: 'fix', prompt: 'fix it as planned:\n{{steps.investigate}}' },
    ],
  })
  expect(await running.done).toMatchObject({ outcome: 'completed' })
  const childRequests = harness.server.requests.filter(isChild)
  const planned = childRequests.find((request) => taskOf(request) === 'investigate the bug')
  const fixing = childRequests.find((request) => taskOf(request).startsWith('fix it as planned'))
  if (!planned || !fixing) throw new Error('a step never reached the model')
  // plan allows read (and the subagent/workflow tools it lists), never write.
  expect(toolsOf(planned)).toContain('read')
  expect(toolsOf(planned)).not.toContain('write')
  expect(toolsOf(planned)).not.toContain('workflow')
  expect(toolsOf(fixing)).toEqual(expect.arrayContaining(['read', 'write', 'workflow']))
  // Each child's own log says what it ran with.
  const started = dataOf(parent.session, 'workflow/task-started')
  const presetOf = (step: string) => {
    const child = children.find((agent) => agent.session.id === started.find((t) => t.step === step)?.childSession)
    return child && dataOf(child.session, 'preset/selected')[0]?.name
  }
  expect(presetOf('investigate')).toBe('plan')
  expect(presetOf('fix')).toBe('code')
  await parent.dispose()
})
