// Tool search on a real agent loop and tool pipeline, the model scripted: what each request carried is
// read from the adapter's dispatches and the session log; the loaded set must follow the log alone.

import { defineTool } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import type { LlmDispatch } from '@dsh/llm'
import { calls, dataOf, type InProcessOptions, startInProcess, text } from '@dsh/test-support/in-process'
import { describe, expect, it } from 'vitest'
import ToolSearchService, { catalog, loadedNames, rank } from '../src/tool-search/index.js'

/** 25 deferred tools `mcp__srv__t0..t24` (t7 adds) and one core tool. */
function testTools(root: Context) {
  for (let i = 0; i < 25; i++)
    root.tools.register(
      defineTool<{ a: number; b: number }>({
        name: `mcp__srv__t${i}`,
        description: i === 7 ? 'Adds two numbers and returns their sum.' : `Tool number ${i} of the test server.`,
        deferred: true,
        parameters: {
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' } },
          required: ['a', 'b'],
          additionalProperties: false,
        },
        execute: (args) => String(args.a + args.b),
      }),
    )
  root.tools.register(
    defineTool({ name: 'core', description: 'always there', parameters: { type: 'object' }, execute: () => 'ok' }),
  )
}

const sent = (dispatch: LlmDispatch | undefined) => (dispatch?.request.tools ?? []).map((tool) => tool.name)

async function boot(config: ConstructorParameters<typeof ToolSearchService>[1], script: InProcessOptions['script']) {
  return startInProcess({
    before: (root) => {
      root.plugin(ToolSearchService, config)
    },
    after: (root) => testTools(root),
    script,
  })
}

describe('tool search', () => {
  it('auto past the threshold: core tools and tool_search; a search loads tools for the rest of the session', async () => {
    const { root, adapter } = await boot({ threshold: 20 }, [
      calls(['c1', 'tool_search', { query: 'add numbers sum' }]),
      calls(['c2', 'mcp__srv__t7', { a: 2, b: 3 }]),
      text('five'),
    ])
    const agent = await root.agents.create({})
    agent.followup('add 2 and 3')
    await agent.whenIdle()
    const [first, second, third] = adapter.dispatches
    expect(sent(first)).toEqual(['core', 'tool_search'])
    const search = first?.request.tools?.find((tool) => tool.name === 'tool_search')
    expect(search?.description).toContain('mcp__srv__{t0, t1,')
    const [found, added] = dataOf(agent.session, 'tool/result').map((data) => data.message)
    expect(found?.content[0]).toMatchObject({ text: expect.stringMatching(/^Loaded tools: mcp__srv__t7(,|\n)/) })
    expect(sent(second)).toContain('mcp__srv__t7')
    expect(sent(second)).toContain('tool_search')
    expect(added).toMatchObject({ isError: false, content: [{ type: 'text', text: '5' }] })
    expect(sent(third)).toEqual(sent(second))
    // The catalog no longer lists what is loaded.
    expect(second?.request.tools?.find((tool) => tool.name === 'tool_search')?.description).not.toMatch(/\bt7\b/)
    // A fork of the session derives the same loaded set from its copied log.
    const child = root.sessions.fork(agent.session)
    expect([...root.toolSearch.loaded(child)]).toEqual(expect.arrayContaining(['mcp__srv__t7']))
    // What the last request left out: recorded for the session it shaped, estimated from the log for the fork.
    expect(root.toolSearch.notSent(agent.session)?.map((tool) => tool.name)).toHaveLength(24)
    expect(root.toolSearch.notSent(child)?.map((tool) => tool.name)).toEqual(
      root.toolSearch.notSent(agent.session)?.map((tool) => tool.name),
    )
  })

  it('at or under the threshold, or off, every tool is sent and tool_search is not', async () => {
    const under = await boot({ threshold: 25 }, [text('a')])
    const agent = await under.root.agents.create({})
    agent.followup('hi')
    await agent.whenIdle()
    expect(sent(under.adapter.dispatches[0])).toHaveLength(26)
    expect(sent(under.adapter.dispatches[0])).not.toContain('tool_search')

    const off = await boot({ mode: 'off', threshold: 0 }, [text('a')])
    const other = await off.root.agents.create({})
    other.followup('hi')
    await other.whenIdle()
    expect(sent(off.adapter.dispatches[0])).toHaveLength(26)
  })

  it('a deferred tool called without loading runs (its arguments checked against the real schema) and is loaded from then on', async () => {
    const { root, adapter } = await boot({ mode: 'on' }, [
      calls(['c1', 'mcp__srv__t3', { a: 1 }]),
      calls(['c2', 'tool_search', { query: 'select:mcp__srv__t4,core,nope' }]),
      text('done'),
    ])
    const agent = await root.agents.create({})
    agent.followup('go')
    await agent.whenIdle()
    const [invalid, selected] = dataOf(agent.session, 'tool/result')
    expect(invalid?.code).toBe('INVALID_ARGUMENTS')
    expect(invalid?.message.content[0]).toMatchObject({ text: expect.stringContaining('"required":["a","b"]') })
    expect(sent(adapter.dispatches[1])).toContain('mcp__srv__t3')
    expect(selected?.message.content[0]).toMatchObject({
      text: expect.stringMatching(
        /^Loaded tools: mcp__srv__t4\n[\s\S]*core is always sent[\s\S]*No tool is named nope/,
      ),
    })
    expect(sent(adapter.dispatches[2])).toEqual(expect.arrayContaining(['mcp__srv__t3', 'mcp__srv__t4']))
  })

  it('an agent whose tools exclude tool_search gets every tool', async () => {
    const { root, adapter } = await boot({ mode: 'on' }, [text('a')])
    const agent = await root.agents.create({ tools: [{ deny: ['tool_search'] }] })
    agent.followup('hi')
    await agent.whenIdle()
    expect(sent(adapter.dispatches[0])).toHaveLength(26)
  })

  it('ranks, names and catalogs', () => {
    const tools = [
      defineTool({
        name: 'mcp__gh__create_issue',
        description: 'Open an issue',
        parameters: { type: 'object' },
        execute: () => '',
      }),
      defineTool({
        name: 'mcp__gh__list_issues',
        description: 'List issues of a repo',
        parameters: { type: 'object' },
        execute: () => '',
      }),
      defineTool({
        name: 'terminal_open',
        description: 'Open a terminal',
        parameters: { type: 'object' },
        execute: () => '',
      }),
    ]
    expect(rank(tools, 'create issue').map((tool) => tool.name)).toEqual([
      'mcp__gh__create_issue',
      'mcp__gh__list_issues',
    ])
    expect(rank(tools, 'list_issues')[0]?.name).toBe('mcp__gh__list_issues')
    expect(rank(tools, 'zzz')).toEqual([])
    expect(loadedNames('Loaded tools: a, b-c\nmore')).toEqual(['a', 'b-c'])
    expect(loadedNames('No deferred tool matches')).toEqual([])
    expect(catalog(tools.map((tool) => tool.name))).toBe('mcp__gh__{create_issue, list_issues}\nterminal_open')
  })
})
