import { releaseAgent } from '@dsh/agent'
import type { LlmAdapter } from '@dsh/llm'
import { expect, it } from 'vitest'
import { createHarness, dataOf, latch } from './harness.js'

it('releaseAgent cancels a running agent, disposes it and closes the session it owns', async () => {
  const streaming = latch()
  const hanging: LlmAdapter = {
    name: 'hanging',
    async *stream(dispatch) {
      streaming.resolve()
      await new Promise((resolve) => dispatch.request.signal?.addEventListener('abort', resolve))
      yield { type: 'finish', reason: 'aborted', error: { code: 'ABORTED', message: 'aborted' } }
    },
  }
  const { root } = await createHarness([], { adapter: hanging })
  const agent = await root.agents.create()
  const session = agent.session
  agent.followup('go')
  await streaming.promise
  const errors: string[] = []
  await releaseAgent(root.sessions, agent, {
    reason: 'the client left',
    ownsSession: true,
    onError: (_error, step) => errors.push(step),
  })
  expect(errors).toEqual([])
  expect(agent.disposed).toBe(true)
  expect(root.sessions.get(session.id)).toBeUndefined()
  expect(dataOf(session, 'turn/end')).toEqual([{ reason: 'aborted', message: 'aborted' }])
  expect(session.isClosed()).toBe(true)
})
