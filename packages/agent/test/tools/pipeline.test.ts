import type { ApprovalAnswer, ApprovalDecided } from '@dsh/agent/approval'
import { describe, expect, it } from 'vitest'
import { defineTool, type ToolCallContext, ToolError, toToolResultMessage } from '../../src/tools/index.js'
import { call, latch, setup, textOf, within } from './helpers.js'

const readTool = (log: string[] = []) =>
  defineTool<{ path: string; limit?: number }>({
    name: 'read',
    description: 'Read a file',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, limit: { type: 'integer', minimum: 1 } },
      required: ['path'],
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'generic', title: `Read ${args.path}`, locations: [{ path: args.path }] }),
    execute: (args) => {
      log.push(args.path)
      return `contents of ${args.path}`
    },
  })

const signal = () => new AbortController().signal

describe('the tool pipeline: bad input becomes results the model can read', () => {
  it('runs a valid call and returns a frozen result with its presentation', async () => {
    const { root, results } = await setup()
    root.tools.register(readTool())
    const result = await root.tools.executeCall(call('read', { path: 'a.ts' }, 'c1'), { signal: signal() })
    expect(result).toEqual({
      toolCallId: 'c1',
      toolName: 'read',
      content: [{ type: 'text', text: 'contents of a.ts' }],
      isError: false,
      bodyInvoked: true,
      additionalContext: [],
      presentation: { kind: 'generic', title: 'Read a.ts', locations: [{ path: 'a.ts' }] },
    })
    expect(Object.isFrozen(result.content[0])).toBe(true)
    expect(results).toEqual([result])
    expect(toToolResultMessage(result)).toEqual({
      role: 'tool',
      toolCallId: 'c1',
      toolName: 'read',
      content: [{ type: 'text', text: 'contents of a.ts' }],
      isError: false,
    })
  })

  it('answers schema violations with what is wrong and the schema to follow, without running the body', async () => {
    const { root } = await setup()
    const log: string[] = []
    root.tools.register(readTool(log))
    const result = await root.tools.executeCall(call('read', { path: 3, limit: 0, mode: 'x' }), { signal: signal() })
    expect(result).toMatchObject({ isError: true, errorCode: 'INVALID_ARGUMENTS', bodyInvoked: false })
    const text = textOf(result)
    expect(text).toContain('Invalid arguments for tool "read"')
    expect(text).toContain('/path must be string')
    expect(text).toContain('/limit must be >= 1')
    expect(text).toContain('(root) must not have the property "mode"')
    expect(text).toContain('"required":["path"]')
    expect(log).toEqual([])
  })

  it("answers a call of a tool whose own schema does not compile, without blaming the model's arguments", async () => {
    const { root } = await setup()
    const log: string[] = []
    root.tools.register(
      defineTool({
        name: 'broken',
        description: 'A tool with a typo in its schema',
        parameters: { type: 'object', properties: { a: { type: 'strng' } } },
        execute: () => {
          log.push('ran')
          return 'ran'
        },
      }),
    )
    const result = await root.tools.executeCall(call('broken', { a: 'x' }), { signal: signal() })
    expect(result).toMatchObject({ isError: true, errorCode: 'INVALID_TOOL_DEFINITION', bodyInvoked: false })
    expect(textOf(result)).toContain('parameters do not compile')
    expect(log).toEqual([])
  })

  it('answers unparseable JSON arguments from the model (argumentsError)', async () => {
    const { root } = await setup()
    root.tools.register(readTool())
    const broken = { ...call('read', {}), rawArguments: '{"path": "a', argumentsError: 'Unterminated string' }
    const result = await root.tools.executeCall(broken, { signal: signal() })
    expect(result.errorCode).toBe('INVALID_ARGUMENTS')
    expect(textOf(result)).toMatch(/not valid JSON \(Unterminated string\)\. Send one JSON object matching/)
  })

  it('answers an unknown tool with the closest name and the tools in scope', async () => {
    const { root } = await setup()
    root.tools.register(readTool())
    root.tools.register(
      defineTool({ name: 'write', description: 'w', parameters: { type: 'object' }, execute: () => '' }),
    )
    const result = await root.tools.executeCall(call('raed', { path: 'x' }), { signal: signal() })
    expect(result).toMatchObject({ isError: true, errorCode: 'UNKNOWN_TOOL', bodyInvoked: false })
    expect(textOf(result)).toBe(
      'Unknown tool "raed". Did you mean "read"? Available tools: read, write. Call a tool by its exact name.',
    )
    expect(result.presentation).toEqual({ kind: 'generic', title: 'raed' })
  })

  it("presents calls by the tool's pure function of args, falling back to generic", async () => {
    const { root } = await setup()
    root.tools.register(
      defineTool<{ command: string; cwd?: string }>({
        name: 'bash',
        description: 'Run a command',
        parameters: {
          type: 'object',
          properties: { command: { type: 'string' }, cwd: { type: 'string' } },
          required: ['command'],
        },
        presentation: (args) => {
          if (args.command === 'explode') throw new Error('presentation bug')
          return { kind: 'terminal', title: 'Shell', command: args.command, ...(args.cwd ? { cwd: args.cwd } : {}) }
        },
        execute: () => '',
      }),
    )
    const run = (args: Record<string, unknown>) => root.tools.executeCall(call('bash', args), { signal: signal() })
    expect((await run({ command: 'ls', cwd: '/w' })).presentation).toEqual({
      kind: 'terminal',
      title: 'Shell',
      command: 'ls',
      cwd: '/w',
    })
    expect((await run({ command: 'explode' })).presentation).toEqual({ kind: 'generic', title: 'bash' })
    expect((await run({ cmd: 'ls' })).presentation).toEqual({ kind: 'generic', title: 'bash' })
  })

  it('normalises body failures: ToolError verbatim, other throws as TOOL_FAILED, isError returns kept', async () => {
    const { root } = await setup()
    const tool = (name: string, execute: () => unknown) =>
      defineTool({ name, description: name, parameters: { type: 'object' }, execute: execute as never })
    root.tools.register(
      tool('missing', () => {
        throw new ToolError('File not found: a.ts. Did you mean b.ts?', 'NOT_FOUND')
      }),
    )
    root.tools.register(
      tool('buggy', () => {
        throw new TypeError('x is undefined')
      }),
    )
    root.tools.register(tool('soft', () => ({ content: 'exit code 1', isError: true, details: { exitCode: 1 } })))
    const run = (name: string) => root.tools.executeCall(call(name), { signal: signal() })
    expect(await run('missing')).toMatchObject({
      isError: true,
      errorCode: 'NOT_FOUND',
      bodyInvoked: true,
      content: [{ type: 'text', text: 'File not found: a.ts. Did you mean b.ts?' }],
    })
    expect(await run('buggy')).toMatchObject({
      errorCode: 'TOOL_FAILED',
      content: [{ type: 'text', text: 'Tool "buggy" failed: x is undefined' }],
    })
    expect(await run('soft')).toMatchObject({ isError: true, errorCode: 'TOOL_ERROR', details: { exitCode: 1 } })
  })

  it('applies finalizeContent last, to successes and errors, without changing isError', async () => {
    const { root } = await setup()
    root.tools.register(
      defineTool<{ fail?: boolean }>({
        name: 'tagged',
        description: 'd',
        parameters: { type: 'object', properties: { fail: { type: 'boolean' } } },
        execute: (args) => {
          if (args.fail) throw new Error('boom')
          return 'fine'
        },
        finalizeContent: (content, { isError }) => [...content, { type: 'text', text: isError ? ' [err]' : ' [ok]' }],
      }),
    )
    root.on('tools/post-execute', async (_exec, next) => {
      const outcome = await next()
      return { ...outcome, content: [{ type: 'text', text: `post(${textOf(outcome as never)})` }] }
    })
    const ok = await root.tools.executeCall(call('tagged'), { signal: signal() })
    expect(textOf(ok)).toBe('post(fine) [ok]')
    const bad = await root.tools.executeCall(call('tagged', { fail: true }), { signal: signal() })
    expect(textOf(bad)).toBe('post(Tool "tagged" failed: boom) [err]')
    expect(bad.isError).toBe(true)
  })
})

describe('the tool pipeline: policy, guards, approval', () => {
  it('lets tools/pre-execute deny with a reason the model reads, before the body', async () => {
    const { root } = await setup()
    const log: string[] = []
    root.tools.register(readTool(log))
    root.on('tools/pre-execute', async (input, next) =>
      input.args.path === '.env' ? { action: 'deny', reason: 'secrets are off limits' } : next(),
    )
    const denied = await root.tools.executeCall(call('read', { path: '.env' }), { signal: signal() })
    expect(denied).toMatchObject({ isError: true, errorCode: 'DENIED', bodyInvoked: false })
    expect(textOf(denied)).toBe('Tool "read" was not run: secrets are off limits.')
    await root.tools.executeCall(call('read', { path: 'ok.ts' }), { signal: signal() })
    expect(log).toEqual(['ok.ts'])
  })

  it('lets tools/pre-execute rewrite arguments, which are validated again and frozen', async () => {
    const { root } = await setup()
    const log: string[] = []
    root.tools.register(readTool(log))
    root.on('tools/pre-execute', async (input) => {
      expect(Object.isFrozen(input.args)).toBe(true)
      return input.args.path === 'bad'
        ? { action: 'allow', args: { path: 7 } }
        : { action: 'allow', args: { path: `/abs/${input.args.path}` } }
    })
    const ok = await root.tools.executeCall(call('read', { path: 'a' }), { signal: signal() })
    expect(ok.presentation).toMatchObject({ title: 'Read /abs/a' })
    const bad = await root.tools.executeCall(call('read', { path: 'bad' }), { signal: signal() })
    expect(bad.errorCode).toBe('INVALID_ARGUMENTS')
    expect(textOf(bad)).toContain('as rewritten by a tools/pre-execute hook')
    expect(log).toEqual(['/abs/a'])
  })

  it('treats a throwing pre-execute listener as a denial (fail closed)', async () => {
    const { root } = await setup()
    const log: string[] = []
    root.tools.register(readTool(log))
    root.on('tools/pre-execute', () => {
      throw new Error('policy file unreadable')
    })
    const result = await root.tools.executeCall(call('read', { path: 'a' }), { signal: signal() })
    expect(result).toMatchObject({ errorCode: 'PIPELINE_FAILED', bodyInvoked: false })
    expect(log).toEqual([])
  })

  it('runs guards after pre-execute: any guard denies, no guard can re-allow, a throwing guard denies', async () => {
    const { root } = await setup()
    const log: string[] = []
    const seen: string[] = []
    root.tools.register(readTool(log))
    root.on('tools/pre-execute', async (input, next) =>
      input.args.path === 'denied-by-policy' ? { action: 'deny', reason: 'policy says no' } : next(),
    )
    root.tools.guard('no-tmp', (input) => {
      seen.push(`no-tmp:${input.args.path}`)
      return String(input.args.path).startsWith('/tmp') ? { deny: 'guard "no-tmp" blocks /tmp' } : undefined
    })
    // A guard that tries to allow: guards have no allow verdict, anything but { deny } abstains.
    root.tools.guard('eager', (input) => {
      seen.push(`eager:${input.args.path}`)
      return { allow: true } as never
    })
    root.tools.guard('flaky', (input) => {
      if (input.args.path === 'explode') throw new Error('guard bug')
      return undefined
    })

    const run = (path: string) => root.tools.executeCall(call('read', { path }), { signal: signal() })
    const policy = await run('denied-by-policy')
    expect(policy.errorCode).toBe('DENIED')
    expect(seen).toEqual([]) // guards never see a denied call, so they cannot re-allow it
    const tmp = await run('/tmp/x')
    expect(textOf(tmp)).toBe('Tool "read" was not run: guard "no-tmp" blocks /tmp.')
    expect(seen).toEqual(['no-tmp:/tmp/x']) // the first denial is final
    const flaky = await run('explode')
    expect(textOf(flaky)).toBe('Tool "read" was not run: guard "flaky" failed: guard bug.')
    await run('fine')
    expect(log).toEqual(['fine'])
    expect(() => root.tools.guard('no-tmp', () => undefined)).toThrow(
      expect.objectContaining({ code: 'DUPLICATE_GUARD' }),
    )
  })

  it('asks ctx.approval for an ask: allowed-once runs, rejected / unavailable / cancelled do not', async () => {
    const { root } = await setup()
    const log: string[] = []
    const decided: ApprovalDecided[] = []
    root.tools.register(readTool(log))
    root.on('tools/pre-execute', async () => ({ action: 'ask', reason: 'reads outside the workspace' }))
    root.on('approval/decided', (d) => {
      decided.push(d)
    })
    const run = (path: string, s = signal()) =>
      root.tools.executeCall(call('read', { path }, `c-${path}`), { signal: s, sessionId: 's1' })

    // No answerer registered: fail closed.
    const none = await run('none')
    expect(none).toMatchObject({ errorCode: 'APPROVAL_UNAVAILABLE', bodyInvoked: false })
    expect(textOf(none)).toBe(
      'Tool "read" was not run: it needs approval (reads outside the workspace) and nobody could approve it: ' +
        'no approval answerer is registered. Choose an action that does not need approval, or tell the user what you need.',
    )

    const answers: Record<string, ApprovalAnswer> = {
      yes: { decision: 'allowed-once' },
      no: { decision: 'rejected', reason: 'use git mv instead.' },
    }
    root.approval.answer(async (question, s) => {
      expect(question).toMatchObject({
        sessionId: 's1',
        toolName: 'read',
        kind: 'tool',
        summary: expect.stringMatching(/^Read /),
      })
      const answer = answers[String(question.toolCallId).slice(2)]
      if (answer) return answer
      await new Promise((resolve) => s.addEventListener('abort', resolve))
      return 'allowed-once' // too late: the request was cancelled
    })
    expect((await run('yes')).isError).toBe(false)
    const no = await run('no')
    expect(no).toMatchObject({ errorCode: 'APPROVAL_REJECTED', bodyInvoked: false })
    expect(textOf(no)).toBe(
      'Tool "read" was not run: the user rejected it: use git mv instead. Do not repeat the same call; change the approach or ask the user.',
    )
    const controller = new AbortController()
    const pending = run('wait', controller.signal)
    setTimeout(() => controller.abort(), 5)
    expect(await pending).toMatchObject({ errorCode: 'APPROVAL_CANCELLED', bodyInvoked: false })

    expect(log).toEqual(['yes']) // allowed-once is one-shot: only that call ran
    expect(decided.map((d) => [d.toolCallId, d.decision])).toEqual([
      ['c-none', 'unavailable'],
      ['c-yes', 'allowed-once'],
      ['c-no', 'rejected'],
      ['c-wait', 'cancelled'],
    ])
  })

  it('turns an ask into a denial when no approval service is installed', async () => {
    const { root } = await setup({ approval: false })
    const log: string[] = []
    root.tools.register(readTool(log))
    root.on('tools/pre-execute', async () => ({ action: 'ask' }))
    const result = await root.tools.executeCall(call('read', { path: 'a' }), { signal: signal() })
    expect(result).toMatchObject({ errorCode: 'APPROVAL_UNAVAILABLE', bodyInvoked: false })
    expect(textOf(result)).toContain('no approval service is installed')
    expect(log).toEqual([])
  })

  it('under the session policy "never" rejects an ask without asking anyone', async () => {
    const { root } = await setup()
    root.tools.register(readTool())
    root.on('tools/pre-execute', async () => ({ action: 'ask' }))
    let asked = 0
    root.approval.answer(() => {
      asked++
      return 'allowed-once'
    })
    root.approval.setPolicy('child', 'never')
    const result = await root.tools.executeCall(call('read', { path: 'a' }), { signal: signal(), sessionId: 'child' })
    expect(result.errorCode).toBe('APPROVAL_REJECTED')
    expect(textOf(result)).toBe(
      'Tool "read" was not run: it needs approval and this session never asks for approval. Choose an action that does not need approval.',
    )
    expect(asked).toBe(0)
  })
})

describe('the tool pipeline: execute and post-execute', () => {
  const waiter = (started = latch()) =>
    defineTool({
      name: 'wait',
      description: 'waits for its signal',
      parameters: { type: 'object' },
      execute: async (_args, context: ToolCallContext) => {
        started.open()
        await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }))
        return `stopped: ${String(context.signal.reason)}`
      },
    })

  it('gives the body a signal that follows the caller, whatever a tools/execute wrapper does', async () => {
    const { root } = await setup()
    const started = latch()
    root.tools.register(waiter(started))
    let swapError: unknown
    root.on('tools/execute', async (execution, next) => {
      try {
        ;(execution as { signal: AbortSignal }).signal = new AbortController().signal
      } catch (error) {
        swapError = error
      }
      execution.link(new AbortController().signal) // a signal that never fires cannot mask the caller's
      return next()
    })
    const controller = new AbortController()
    const pending = root.tools.executeCall(call('wait'), { signal: controller.signal })
    await within(started, 2000, 'the body to start')
    controller.abort('user cancelled')
    const result = await pending
    expect(swapError).toBeInstanceOf(TypeError)
    expect(result).toMatchObject({ isError: false, bodyInvoked: true })
    expect(textOf(result)).toBe('stopped: user cancelled')
  })

  it('lets a wrapper add an abort source (a timeout), and marks a throw after abort as ABORTED', async () => {
    const { root } = await setup()
    root.tools.register(waiter())
    root.tools.register(
      defineTool({
        name: 'strict',
        description: 'throws when aborted',
        parameters: { type: 'object' },
        execute: async (_args, context) => {
          await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }))
          throw new Error('interrupted')
        },
      }),
    )
    root.on('tools/execute', async (execution, next) => {
      const timeout = new AbortController()
      execution.link(timeout.signal)
      setTimeout(() => timeout.abort('timeout after 5ms'), 5)
      return next()
    })
    expect(textOf(await root.tools.executeCall(call('wait'), { signal: signal() }))).toBe('stopped: timeout after 5ms')
    const strict = await root.tools.executeCall(call('strict'), { signal: signal() })
    expect(strict).toMatchObject({ isError: true, errorCode: 'ABORTED', bodyInvoked: true })
    expect(textOf(strict)).toBe('Tool "strict" was cancelled while running: interrupted')
  })

  it('lets tools/post-execute replace content and add context; a throwing hook is a PIPELINE_FAILED result', async () => {
    const { root } = await setup()
    root.tools.register(readTool())
    let mode: 'replace' | 'throw' = 'replace'
    root.on('tools/post-execute', async (execution, next) => {
      const outcome = await next()
      if (mode === 'throw') throw new Error('spill store full')
      return {
        ...outcome,
        content: [{ type: 'text', text: `[spilled ${execution.args.path}]` }],
        additionalContext: [...outcome.additionalContext, 'Note: a.ts changed since you last read it.'],
      }
    })
    const replaced = await root.tools.executeCall(call('read', { path: 'a.ts' }), { signal: signal() })
    expect(replaced).toMatchObject({
      isError: false,
      content: [{ type: 'text', text: '[spilled a.ts]' }],
      additionalContext: ['Note: a.ts changed since you last read it.'],
    })
    mode = 'throw'
    const failed = await root.tools.executeCall(call('read', { path: 'a.ts' }), { signal: signal() })
    expect(failed).toMatchObject({ isError: true, errorCode: 'PIPELINE_FAILED', bodyInvoked: true })
    expect(textOf(failed)).toBe(
      'Tool "read" ran, but a tools/execute or tools/post-execute hook failed: spill store full',
    )
  })

  it('reports a tools/execute wrapper that fails before the body as not run', async () => {
    const { root } = await setup()
    const log: string[] = []
    root.tools.register(readTool(log))
    root.on('tools/execute', () => {
      throw new Error('metrics backend down')
    })
    const result = await root.tools.executeCall(call('read', { path: 'a' }), { signal: signal() })
    expect(result).toMatchObject({ errorCode: 'PIPELINE_FAILED', bodyInvoked: false })
    expect(log).toEqual([])
  })
})
