// A three-step tool task over real HTTP: the deepseek adapter against the mock SSE server, the real
// plugins, a tool that writes a real file. The durable log must match the expected event sequence.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentsService } from '@dsh/agent'
import { SystemPromptService } from '@dsh/agent/system-prompt'
import { defineTool, ToolsService } from '@dsh/agent/tools'
import { Context, InvariantsService } from '@dsh/kernel'
import { LlmService } from '@dsh/llm'
import deepseek from '@dsh/llm/deepseek'
import { SessionService } from '@dsh/session'
import CredentialsService from '@dsh/settings/credentials'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'
import { expect, it } from 'vitest'
import AgentLoopService from '../src/index.js'
import { types } from './harness.js'

it('runs a three-step tool task over HTTP and logs exactly the expected facts', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dsh-e2e-'))
  await using server = await startMockLlmServer({
    responses: [
      completionResponse({
        reasoning: 'I should write the file first.',
        toolCalls: [{ id: 'call_1', name: 'write_file', arguments: ['{"path":"notes.txt",', '"text":"hello"}'] }],
      }),
      completionResponse({ toolCalls: [{ id: 'call_2', name: 'read_file', arguments: '{"path":"notes.txt"}' }] }),
      completionResponse({ text: ['The file ', 'says hello.'] }),
    ],
  })
  const root = new Context()
  try {
    root.plugin(InvariantsService)
    root.plugin(CredentialsService, {
      env: { DEEPSEEK_API_KEY: 'sk-e2e', DEEPSEEK_BASE_URL: server.url },
      home: dir,
      cwd: dir,
    })
    root.plugin(LlmService)
    root.plugin(deepseek, {})
    root.plugin(SessionService, { cwd: dir })
    root.plugin(ToolsService)
    root.plugin(SystemPromptService)
    root.plugin(AgentsService)
    await root.plugin(AgentLoopService, { model: { provider: 'deepseek', model: 'deepseek-v4-pro' } })
    root.tools.register(
      defineTool<{ path: string; text: string }>({
        name: 'write_file',
        description: 'writes a file',
        parameters: {
          type: 'object',
          properties: { path: { type: 'string' }, text: { type: 'string' } },
          required: ['path', 'text'],
        },
        execute: async ({ path, text }) => {
          await writeFile(join(dir, path), text)
          return `wrote ${text.length} bytes to ${path}`
        },
      }),
    )
    root.tools.register(
      defineTool<{ path: string }>({
        name: 'read_file',
        description: 'reads a file',
        mode: 'parallel-safe',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        execute: ({ path }) => readFile(join(dir, path), 'utf8'),
      }),
    )
    const agent = await root.agents.create()
    agent.followup('write hello to notes.txt and read it back')
    await agent.whenIdle()

    expect(await readFile(join(dir, 'notes.txt'), 'utf8')).toBe('hello')
    const step = (...middle: string[]) => [
      'step/start',
      ...middle,
      'request/header',
      'request/context',
      'assistant/message',
    ]
    expect(types(agent.session)).toEqual([
      'agent/inbox/spliced',
      'turn/start',
      'agent/inbox/spliced',
      ...step('user/message'),
      'tool/call',
      'tool/result',
      'step/end',
      ...step(),
      'tool/call',
      'tool/result',
      'step/end',
      ...step(),
      'step/end',
      'turn/end',
    ])
    expect(agent.session.events.at(-1)?.data).toEqual({ reason: 'completed' })
    const final = agent.session.deriveMessages().at(-1)
    expect(final?.content).toEqual([{ type: 'text', text: 'The file says hello.' }])

    // What went over the wire is what the log derives: the third request carries both tool results
    // and the reasoning of the first turn is sent back after the tool call.
    expect(server.requests).toHaveLength(3)
    const third = server.requests[2]?.body as {
      messages: Array<{ role: string; content?: string; tool_call_id?: string; reasoning_content?: string }>
    }
    expect(third.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content])).toEqual([
      ['call_1', 'wrote 5 bytes to notes.txt'],
      ['call_2', 'hello'],
    ])
    expect(third.messages.find((m) => m.role === 'assistant')?.reasoning_content).toBe('I should write the file first.')
    root.invariants.assert()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
