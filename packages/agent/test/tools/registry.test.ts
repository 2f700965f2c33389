import { AGENT_SCOPE, Context, HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { defineTool, type ToolDefinition, ToolsService } from '../../src/tools/index.js'
import { setup } from './helpers.js'

const named = (name: string, description = `the ${name} tool`) =>
  defineTool({
    name,
    description,
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    execute: () => 'ok',
  })

const optInSpec = {
  description: 'a tool for one job',
  parameters: { type: 'object', properties: {} },
  optIn: true,
  execute: () => 'done',
} as const

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return HarnessError.is(error) ? error.code : `not a HarnessError: ${String(error)}`
  }
  return undefined
}

describe('defineTool', () => {
  it('freezes a checked tool with its model-facing schema and exclusive mode by default', () => {
    const tool = named('read')
    expect(Object.isFrozen(tool)).toBe(true)
    expect(tool.mode).toBe('exclusive')
    expect(tool.schema).toEqual({
      name: 'read',
      description: 'the read tool',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    })
    expect(tool.validate({ path: 'a' })).toBeUndefined()
    expect(tool.validate({ path: 1, extra: true })).toEqual(['/path must be string'])
    expect(tool.validate({})).toEqual(["(root) must have required property 'path'"])
  })

  it('fails loud at load for a bad name, schema, body or mode', () => {
    const base = { name: 'ok', description: 'd', parameters: { type: 'object' as const }, execute: () => 'x' }
    expect(codeOf(() => defineTool({ ...base, name: 'has space' }))).toBe('INVALID_TOOL_DEFINITION')
    expect(codeOf(() => defineTool({ ...base, description: ' ' }))).toBe('INVALID_TOOL_DEFINITION')
    expect(codeOf(() => defineTool({ ...base, parameters: { type: 'string' } as never }))).toBe(
      'INVALID_TOOL_DEFINITION',
    )
    // A schema that does not compile fails on its first use (compiling every tool at start-up was slow).
    const typo = defineTool({ ...base, parameters: { type: 'object', properties: { a: { type: 'strng' } } } })
    expect(codeOf(() => typo.compile())).toBe('INVALID_TOOL_DEFINITION')
    expect(codeOf(() => typo.validate({ a: 'x' }))).toBe('INVALID_TOOL_DEFINITION')
    for (const parameters of [
      { type: 'object', properties: { a: { typo: 'string' } } },
      { type: 'object', required: 'a' },
      { type: 'object', properties: { a: { type: 'string', minLength: 'x' } } },
    ] as const) {
      expect(
        codeOf(() => defineTool({ ...base, parameters }).compile()),
        JSON.stringify(parameters),
      ).toBe('INVALID_TOOL_DEFINITION')
    }
    expect(codeOf(() => defineTool({ ...base, execute: undefined as never }))).toBe('INVALID_TOOL_DEFINITION')
    expect(codeOf(() => defineTool({ ...base, mode: 'sometimes' as never }))).toBe('INVALID_TOOL_DEFINITION')
    expect(codeOf(() => defineTool({ ...base, mode: 'parallel-safe' }))).toBeUndefined()
  })
})

describe('ctx.tools registry', () => {
  it("lists a scope in name order: global + its agent's own layer, the agent's tools shadowing global ones", async () => {
    const { root } = await setup()
    root.tools.register(named('write', 'global write'))
    root.tools.register(named('read', 'global read'))
    root.tools.register(named('read', 'agent read'), { agentId: 'a1' })
    root.tools.register(named('todo', 'agent todo'), { agentId: 'a1' })
    root.tools.register(named('other', 'another agent'), { agentId: 'a2' })

    const describe = (scope?: { agentId?: string }) =>
      root.tools.list(scope).map((schema) => `${schema.name}:${schema.description}`)
    expect(describe()).toEqual(['read:global read', 'write:global write'])
    expect(describe({ agentId: 'a1' })).toEqual(['read:agent read', 'todo:agent todo', 'write:global write'])
    expect(root.tools.get('other', { agentId: 'a1' })).toBeUndefined()
  })

  it('registers into the agent layer by default under a context extended with AGENT_SCOPE', async () => {
    const { root } = await setup()
    const scoped = root.extend({ [AGENT_SCOPE]: 'a1' })
    scoped.tools.register(named('lint', 'preset row tool'))
    expect(root.tools.list().map((s) => s.name)).toEqual([])
    expect(root.tools.list({ agentId: 'a1' }).map((s) => s.description)).toEqual(['preset row tool'])
  })

  it("narrows global tools by every restriction (names and globs), never the agent's own tools", async () => {
    const { root } = await setup()
    for (const name of ['read', 'write', 'bash', 'grep', 'mcp__git__log', 'mcp__git__push']) {
      root.tools.register(named(name))
    }
    root.tools.register(named('todo'), { agentId: 'child' })
    root.tools.register(named('bash', 'child bash'), { agentId: 'child' })
    const scope = {
      agentId: 'child',
      preset: 'ask',
      restrictions: [{ allow: ['read', 'gr?p', 'write', 'mcp__git__*'], deny: ['write'] }, { deny: ['*push'] }],
    }
    expect(root.tools.list(scope).map((s) => s.name)).toEqual(['bash', 'grep', 'mcp__git__log', 'read', 'todo'])
    expect(root.tools.get('bash', scope)?.description).toBe('child bash')
    expect(root.tools.get('write', scope)).toBeUndefined()
    const result = await root.tools.executeCall(
      { type: 'tool-call', id: 'c', name: 'write', arguments: { path: 'x' } },
      { ...scope, signal: new AbortController().signal },
    )
    expect(result.errorCode).toBe('TOOL_NOT_ALLOWED')
    expect(result.bodyInvoked).toBe(false)
    expect(result.content[0]).toMatchObject({
      text: expect.stringContaining(
        'not available to this agent (preset "ask"). Available tools: bash, grep, mcp__git__log, read, todo.',
      ),
    })
    const unknown = await root.tools.executeCall(
      { type: 'tool-call', id: 'd', name: 'nope', arguments: {} },
      { ...scope, signal: new AbortController().signal },
    )
    expect(unknown.errorCode).toBe('UNKNOWN_TOOL')
  })

  it('an opt-in tool is offered only where an allow list names it exactly, never by default or a glob', async () => {
    const { root } = await setup()
    root.tools.register(named('read'))
    root.tools.register(defineTool({ ...optInSpec, name: 'report_finding' }))
    expect(root.tools.list({}).map((s) => s.name)).toEqual(['read'])
    expect(root.tools.list({ restrictions: [{ allow: ['*'] }] }).map((s) => s.name)).toEqual(['read'])
    const review = { restrictions: [{ allow: ['read', 'report_finding'] }] }
    expect(root.tools.list(review).map((s) => s.name)).toEqual(['read', 'report_finding'])
    const call = { type: 'tool-call', id: 'c', name: 'report_finding', arguments: {} } as const
    const refused = await root.tools.executeCall(call, { signal: new AbortController().signal })
    expect(refused.bodyInvoked).toBe(false)
    const ran = await root.tools.executeCall(call, { ...review, signal: new AbortController().signal })
    expect(ran.bodyInvoked).toBe(true)
  })

  it('refuses a duplicate name within one layer', async () => {
    const { root } = await setup()
    root.tools.register(named('read'))
    root.tools.register(named('read'), { agentId: 'a' })
    expect(codeOf(() => root.tools.register(named('read')))).toBe('DUPLICATE_TOOL')
    expect(codeOf(() => root.tools.register(named('read'), { agentId: 'a' }))).toBe('DUPLICATE_TOOL')
    const fake = { name: 'fake', description: 'd', parameters: { type: 'object' }, execute: () => 'x' }
    expect(codeOf(() => root.tools.register(fake as unknown as ToolDefinition<never>))).toBe('INVALID_TOOL_DEFINITION')
  })

  it('removes a registration with its disposer or with the plugin that made it', async () => {
    const { root } = await setup()
    const off = root.tools.register(named('read'))
    const agent = root.plugin({
      name: 'agent-a1',
      inject: ['tools'],
      apply(ctx) {
        ctx.tools.register(named('todo'), { agentId: 'a1' })
        ctx.tools.register(named('read'), { agentId: 'a1' })
      },
    })
    await agent
    expect(root.tools.list({ agentId: 'a1' }).map((s) => s.name)).toEqual(['read', 'todo'])
    off()
    expect(root.tools.list().map((s) => s.name)).toEqual([])
    expect(root.tools.list({ agentId: 'a1' }).map((s) => s.name)).toEqual(['read', 'todo'])
    await agent.dispose()
    expect(root.tools.list({ agentId: 'a1' })).toEqual([])
    // The name is free again in every layer.
    root.tools.register(named('read'))
    root.tools.register(named('todo'), { agentId: 'a1' })
  })

  it('refuses a bad concurrency in its config at load', async () => {
    const root = new Context()
    expect(codeOf(() => new ToolsService(root, { concurrency: 0 }))).toBe('INVALID_CONCURRENCY')
    expect(codeOf(() => new ToolsService(root, { concurrency: 1.5 }))).toBe('INVALID_CONCURRENCY')
  })

  it('hands out frozen schemas, one list per tool-set version, so callers cannot edit the registry', async () => {
    const { root } = await setup()
    const off = root.tools.register(named('read'))
    const list = root.tools.list()
    const [schema] = list
    expect(() => {
      ;(schema as { description: string }).description = 'edited'
    }).toThrow(TypeError)
    expect(() => (list as unknown[]).push({})).toThrow(TypeError)
    expect(root.tools.list()[0]?.description).toBe('the read tool')
    // Unchanged tool set: the same list; a registration or a removal: a new one.
    expect(root.tools.list()).toBe(list)
    root.tools.register(named('grep'))
    const grown = root.tools.list()
    expect(grown).not.toBe(list)
    expect(grown.map((s) => s.name)).toEqual(['grep', 'read'])
    off()
    expect(root.tools.list().map((s) => s.name)).toEqual(['grep'])
  })
})
