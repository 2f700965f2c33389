// `/compact` and `/context` through the real `ctx.commands` (@dsh/interaction): the built-in
// `/compact` calls `ctx.compaction.compact`, and the meter registers `/context`.

import builtinCommands from '@dsh/interaction/builtin-commands'
import CommandsService from '@dsh/interaction/commands'
import type { AssistantMessage } from '@dsh/llm'
import { createScriptedAdapter } from '@dsh/llm/scripted'
import { expect, it } from 'vitest'
import { createContextHarness, messageOf, textOf } from './harness.js'

const say = (text: string): AssistantMessage => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  finishReason: 'stop',
})

it('/compact and /context work through ctx.commands', async () => {
  const adapter = Object.assign(createScriptedAdapter([say('a'), say('b'), say('what happened so far')]), {
    catalog: (provider: string) => ({
      provider,
      defaultModel: 'scripted',
      models: [{ id: 'scripted', contextWindow: 2000 }],
    }),
  })
  const root = await createContextHarness({ adapter, pruning: false, compaction: { auto: false } })
  await root.plugin(CommandsService)
  await root.plugin(builtinCommands)
  const agent = await root.agents.create()
  for (const text of ['one', 'two']) {
    agent.followup(text)
    await agent.whenIdle()
  }
  const before = await root.commands.dispatch('/context', { session: agent.session, agent })
  expect(before).toMatchObject({ ok: true, name: 'context' })
  expect(before.text.split('\n')[0]).toMatch(
    /^next request: about \d+ tokens of 2,000 \(\d+%\); estimated from the text$/,
  )
  expect(before.text).toContain('compaction: when a request would pass 80% of the window (about 1,600 tokens)')

  const compact = await root.commands.dispatch('/compact', { session: agent.session, agent })
  expect(compact).toMatchObject({ ok: true, name: 'compact' })
  const end = agent.session.events.at(-1)
  expect(end?.type).toBe('compaction/end')
  expect(end?.data).toMatchObject({ trigger: 'manual', ok: true })
  expect(textOf(messageOf(agent.session.events.at(-2)))).toContain('what happened so far')

  // A failed summary call: the command fails with the compaction's code (the script is used up).
  const again = await root.commands.dispatch('/compact', { session: agent.session, agent })
  expect(again).toMatchObject({ ok: false, code: 'COMPACTION_MODEL_FAILED' })
})
