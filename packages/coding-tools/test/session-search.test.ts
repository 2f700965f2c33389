// The session_search tool in a whole in-process dsh with JSONL persistence and the FTS index: the
// model finds a phrase from an earlier session of its workspace, reads the events around the hit,
// and never sees sessions of another workspace or its own.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { calls, dataOf, startInProcess, text } from '@dsh/test-support/in-process'
import { afterEach, beforeEach, expect, it } from 'vitest'
import SessionQueryService from '../../session/src/store/query.js'
import * as searchTool from '../src/session-search.js'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-search-tool-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

it('finds a phrase from an earlier session of this workspace and reads around the hit', async () => {
  const { root, adapter } = await startInProcess({
    sessionsDir: dir,
    cwd: '/work/project',
    script: [text('Noted: the deploy key rotates on Tuesdays.'), text('Also noted.')],
    after: async (ctx) => {
      await ctx.plugin(SessionQueryService, { search: {} })
      await ctx.plugin(searchTool)
    },
  })
  const agents: Array<{ dispose(): Promise<void> }> = []
  try {
    const earlier = await root.agents.create()
    earlier.followup('remember: the deploy key rotates on purple Tuesdays')
    await earlier.whenIdle()
    const elsewhere = await root.agents.create({ cwd: '/work/other' })
    elsewhere.followup('purple Tuesdays are also a thing in the other project')
    await elsewhere.whenIdle()
    agents.push(earlier, elsewhere)
    for (const agent of [earlier, elsewhere]) await root.sessions.flush(agent.session)

    const hitSeq = earlier.session.events.find((event) => event.type === 'user/message')?.seq as number
    adapter.push(
      calls(['s1', 'session_search', { query: 'purple tuesdays' }]),
      calls(['s2', 'session_search', { session: earlier.session.id, seq: hitSeq, radius: 2 }]),
      calls(['s3', 'session_search', { session: elsewhere.session.id, seq: 0 }]),
      text('The key rotates on Tuesdays.'),
    )
    const now = await root.agents.create()
    agents.push(now)
    now.followup('when does the deploy key rotate? it was in an earlier session')
    await now.whenIdle()

    const results = dataOf(now.session, 'tool/result').map((data) => data.message)
    const [found, around, foreign] = results.map((message) =>
      message?.content.map((block) => ('text' in block ? block.text : '')).join(''),
    )
    expect(found).toContain(`${earlier.session.id} #${hitSeq}`)
    expect(found).toContain('[purple]')
    expect(found).not.toContain(elsewhere.session.id)
    expect(around).toContain('user: remember: the deploy key rotates on purple Tuesdays')
    expect(around).toContain('assistant: Noted: the deploy key rotates on Tuesdays.')
    expect(results[2]?.isError).toBe(true)
    expect(foreign).toContain('[not found]')
  } finally {
    for (const agent of agents) await agent.dispose()
    root.sessionQuery.index?.close()
  }
})
