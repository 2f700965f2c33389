// Model-written session titles: after the first completed turn of a root session the configured
// model is asked once, the answer is logged as `session/title`, and session lists show it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sessionUsage } from '@dsh/session'
import SettingsService from '@dsh/settings'
import { dataOf, startInProcess, text } from '@dsh/test-support/in-process'
import { afterEach, beforeEach, expect, it } from 'vitest'
import * as title from '../src/title.js'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-title-'))
})
// A closed session's persistence may still be releasing its lease file when the test ends: retry the removal.
afterEach(() => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }))

it('titles a session once, after its first completed turn, and the list shows the title', async () => {
  const { root, adapter } = await startInProcess({
    sessionsDir: dir,
    script: [
      text('The login test waits on a timer.'),
      { ...text('"Flaky login test."\nextra line'), usage: { inputTokens: 120, outputTokens: 6, totalTokens: 126 } },
      text('Done.'),
    ],
    after: (ctx) => ctx.plugin(title),
  })
  const agent = await root.agents.create()
  try {
    agent.followup('why is the login test flaky?')
    await agent.whenIdle()
    agent.followup('fix it')
    await agent.whenIdle()
    // What the title request used is logged with it (no price known: an unknown cost, never 0).
    expect(dataOf(agent.session, 'session/title')).toEqual([
      {
        title: 'Flaky login test',
        provider: 'scripted',
        model: 'scripted',
        usage: { inputTokens: 120, outputTokens: 6, totalTokens: 126 },
        cost: {},
      },
    ])
    expect(sessionUsage(agent.session.events)).toMatchObject({
      requests: 1,
      unknownRequests: 1,
      models: [{ model: 'scripted:scripted', inputTokens: 120, outputTokens: 6 }],
    })
    // One title request (the second of three), made with the excerpt of the conversation.
    expect(adapter.dispatches).toHaveLength(3)
    const asked = JSON.stringify(adapter.dispatches[1]?.request.messages)
    expect(asked).toContain('why is the login test flaky?')
    expect(asked).toContain('The login test waits on a timer.')
    await root.sessions.flush(agent.session)
    const [summary] = await root.sessionStore.summaries()
    expect(summary?.title).toBe('Flaky login test')
  } finally {
    await agent.dispose()
  }
})

it('is off with enabled: off, and a failed title request only means no title', async () => {
  const off = await startInProcess({ script: [text('ok')], after: (ctx) => ctx.plugin(title, { enabled: 'off' }) })
  const quiet = await off.root.agents.create()
  quiet.followup('hi')
  await quiet.whenIdle()
  expect(off.adapter.dispatches).toHaveLength(1)
  expect(dataOf(quiet.session, 'session/title')).toEqual([])
  await quiet.dispose()

  // The script has no answer left for the title request: the scripted model fails it.
  const failing = await startInProcess({ script: [text('ok')], after: (ctx) => ctx.plugin(title) })
  const agent = await failing.root.agents.create()
  agent.followup('hi')
  await agent.whenIdle()
  expect(dataOf(agent.session, 'session/title')).toEqual([])
  expect(dataOf(agent.session, 'turn/end').map((end) => end.reason)).toEqual(['completed'])
  await agent.dispose()
})

it('is the `session.titles` setting: off in the user file stops the title request, the environment turns it on', async () => {
  writeFileSync(join(dir, 'settings.yaml'), 'session.titles: off\n')
  const run = async (env: Record<string, string>) => {
    const started = await startInProcess({
      script: [text('ok'), text('A title')],
      before: (root) => root.plugin(SettingsService, { home: dir, cwd: dir, env }),
      after: (ctx) => ctx.plugin(title),
    })
    const agent = await started.root.agents.create()
    agent.followup('hi')
    await agent.whenIdle()
    const titles = dataOf(agent.session, 'session/title').map((entry) => entry.title)
    await agent.dispose()
    return { titles, requests: started.adapter.dispatches.length }
  }
  expect(await run({})).toEqual({ titles: [], requests: 1 })
  expect(await run({ DSH_SESSION_TITLES: 'on' })).toEqual({ titles: ['A title'], requests: 2 })
})
