// The system prompt and the tool schemas are logged by content hash (bodies once per log). A request
// rebuilt from the durable log alone (header resolved through the hashes, messages folded from the
// events before it) and sent again through the same adapter must be byte-identical on the wire to
// what was sent, also after the prompt and the tool set changed between turns.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AgentsService } from '@dsh/agent'
import { SystemPromptService } from '@dsh/agent/system-prompt'
import { defineTool, ToolsService } from '@dsh/agent/tools'
import { Context, InvariantsService } from '@dsh/kernel'
import { LlmService } from '@dsh/llm'
import deepseek from '@dsh/llm/deepseek'
import { foldMessages, SessionService } from '@dsh/session'
import SessionPersistence from '@dsh/session/store/coordinator'
import JsonlSessionStore from '@dsh/session/store/jsonl'
import CredentialsService from '@dsh/settings/credentials'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'
import { expect, it } from 'vitest'
import AgentLoopService from '../src/index.js'

const echo = (name: string) =>
  defineTool<{ text: string }>({
    name,
    description: `echoes text (${name})`,
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    execute: ({ text }) => text,
  })

async function withLlm(dir: string, url: string, extra: (root: Context) => Promise<void>): Promise<Context> {
  const root = new Context()
  root.plugin(CredentialsService, { env: { DEEPSEEK_API_KEY: 'sk-hash', DEEPSEEK_BASE_URL: url }, home: dir, cwd: dir })
  root.plugin(LlmService)
  await root.plugin(deepseek, {})
  await extra(root)
  return root
}

it('rebuilds every request byte for byte from a log that stores prompt and tools by hash', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'dsh-hash-'))
  const call = (id: string, text: string) =>
    completionResponse({ toolCalls: [{ id, name: 'echo', arguments: JSON.stringify({ text }) }] })
  await using server = await startMockLlmServer({
    responses: [
      call('c1', 'one'),
      call('c2', 'two'),
      completionResponse({ text: 'first turn done' }),
      call('c3', 'three'),
      completionResponse({ text: 'second turn done' }),
    ],
  })
  const sessionsDir = join(dir, 'sessions')
  try {
    const root = await withLlm(dir, server.url, async (r) => {
      r.plugin(InvariantsService)
      r.plugin(SessionService, { cwd: dir })
      r.plugin(JsonlSessionStore, { dir: sessionsDir })
      r.plugin(SessionPersistence)
      r.plugin(ToolsService)
      r.plugin(SystemPromptService)
      r.plugin(AgentsService)
      await r.plugin(AgentLoopService, { model: { provider: 'deepseek', model: 'deepseek-v4-pro' } })
    })
    root.tools.register(echo('echo'))
    root.systemPrompt.register({ name: 'base', order: 0, render: () => 'You are a careful agent.' })
    const agent = await root.agents.create()
    agent.followup('echo twice')
    await agent.whenIdle()
    root.invariants.assert()
    // Between the turns the prompt and the tool set change: new bodies, logged once each.
    root.tools.register(echo('shout'))
    root.systemPrompt.register({ name: 'extra', order: 1, render: () => 'Answer briefly.' })
    agent.followup('echo once more')
    await agent.whenIdle()
    root.invariants.assert()
    const id = agent.session.id
    await agent.dispose()
    await root.sessions.flush()
    expect(server.requests).toHaveLength(5)

    // From here on only the file: a fresh process's view of the durable log.
    const reader = new Context()
    reader.plugin(SessionService, { cwd: dir })
    reader.plugin(JsonlSessionStore, { dir: sessionsDir })
    await reader.plugin(SessionPersistence)
    const log = await reader.sessionPersistence.read(id)
    const headers = log.events.filter((event) => event.type === 'request/header')
    expect(headers).toHaveLength(5)
    // Bodies only where they first appear: request 1 (both) and request 4 (both changed).
    expect(headers.map((h) => [h.data.system !== undefined, h.data.tools !== undefined])).toEqual([
      [true, true],
      [false, false],
      [false, false],
      [true, true],
      [false, false],
    ])
    expect(new Set(headers.map((h) => h.data.toolsHash)).size).toBe(2)

    await using replay = await startMockLlmServer({
      respond: () => completionResponse({ text: 'replayed' }),
    })
    const again = await withLlm(dir, replay.url, async () => {})
    for (const header of headers) {
      const request = log.requestOf(header.seq)
      const messages = foldMessages(log.events.slice(0, header.seq))
      const stream = again.llm.stream(again.llm.prepareCall(request.config), {
        system: request.system,
        tools: request.tools,
        messages,
      })
      for await (const _ of stream);
    }
    expect(replay.requests.map((r) => r.rawBody)).toEqual(server.requests.map((r) => r.rawBody))
    const first = JSON.parse(server.requests[3]?.rawBody ?? '{}') as {
      tools: unknown[]
      messages: Array<{ content: string }>
    }
    expect(first.tools).toHaveLength(2)
    expect(first.messages[0]?.content).toBe('You are a careful agent.\n\nAnswer briefly.')
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})
