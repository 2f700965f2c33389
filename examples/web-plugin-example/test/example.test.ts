// The example plugin end to end in one process: the model calls `show_table` and gets the table as
// Markdown in the log; the row's client module is in the web host's manifest and served as written.
import { readFileSync } from 'node:fs'
import WebHostService from '@dsh/surfaces/web/server'
import { calls, dataOf, startInProcess, text } from '@dsh/test-support/in-process'
import { describe, expect, it } from 'vitest'
import example from '../src/index.js'

describe('web-plugin-example', () => {
  it('gives the model show_table and the page its client module', async () => {
    const { root } = await startInProcess({
      script: [
        calls(['c1', 'show_table', { title: 'Sizes', columns: ['name', 'size'], rows: [['a|b', '1']] }]),
        calls(['c2', 'show_table', { columns: ['one'], rows: [['x', 'y']] }]),
        text('done'),
      ],
      before: async (root) => {
        await root.plugin(WebHostService, { staticDir: '/nonexistent' })
        await root.plugin(example)
      },
    })
    const agent = await root.agents.create()
    await agent.followup('show a table')
    await agent.whenIdle()
    const results = dataOf(agent.session, 'tool/result').map((data) => ({
      text: data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join(''),
      isError: data.message.isError,
    }))
    expect(results[0]).toEqual({ text: 'Sizes\n\n| name | size |\n| --- | --- |\n| a\\|b | 1 |', isError: false })
    expect(results[1]?.isError).toBe(true)
    expect(results[1]?.text).toContain('row 0 has 2 cells but there are 1 columns')

    const handle = await root.webHost.listen({ port: 0 })
    try {
      const manifest = (await fetch(`http://127.0.0.1:${handle.port}/api/client-modules`).then((res) =>
        res.json(),
      )) as { modules: Array<{ id: string; url: string }> }
      expect(manifest.modules.map((module) => module.id)).toEqual(['web-plugin-example'])
      const served = await fetch(`http://127.0.0.1:${handle.port}${manifest.modules[0]?.url}`).then((res) => res.text())
      expect(served).toBe(readFileSync(new URL('../client/show-table.js', import.meta.url), 'utf8'))
    } finally {
      await handle.close()
    }
  })
})
