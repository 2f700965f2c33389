// The request body is assembled from cached pieces (wire-json.ts, wire-messages.ts). Whatever the
// cache holds, the bytes must equal those of a cold adapter building the same request from scratch,
// and equal JSON.stringify of the plain body: over a growing history, a replaced message in the middle
// (pruning), a mutable message changed between requests, and a request with images.
import { describe, expect, it } from 'vitest'
import type { LlmDispatch } from '../src/adapter.js'
import { buildBody, type ChatCompletionsOptions } from '../src/chat-completions.js'
import type { Message } from '../src/messages.js'
import { createModelTransport } from '../src/transport.js'
import { bodyText, JsonText } from '../src/wire-json.js'
import { plainWireMessages } from '../src/wire-messages.js'

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const item of Object.values(value)) deepFreeze(item)
    Object.freeze(value)
  }
  return value
}

function options(): ChatCompletionsOptions {
  return {
    name: 'test',
    providers: ['deepseek'],
    dialect: 'deepseek',
    baseUrl: async () => 'http://127.0.0.1:1',
    apiKey: async () => undefined,
    keyName: 'DEEPSEEK_API_KEY',
    keyRequired: false,
    defaultModel: () => 'deepseek-chat',
    models: [{ id: 'deepseek-chat', contextWindow: 64_000 }],
    thinking: true,
    firstByteTimeoutMs: 1000,
    idleTimeoutMs: 1000,
    responseTimeoutMs: 10_000,
    transport: createModelTransport({ connectTimeoutMs: 1000, firstByteTimeoutMs: 1000, idleTimeoutMs: 1000 }),
  }
}

const tools = deepFreeze([
  { name: 'echo', description: 'echoes "quoted" text ✓', parameters: { type: 'object', properties: {} } },
])

function dispatchOf(messages: readonly Message[]): LlmDispatch {
  return {
    call: { provider: 'deepseek', model: 'deepseek-chat' },
    request: { system: 'You are "dsh".\n', messages, tools },
  } as unknown as LlmDispatch
}

async function bytes(opts: ChatCompletionsOptions, messages: readonly Message[]): Promise<string> {
  const dispatch = dispatchOf(messages)
  const built = await buildBody(dispatch, opts)
  if ('error' in built) throw new Error(built.error.message)
  return bodyText(built.body)
}

function step(index: number): Message[] {
  return [
    deepFreeze({
      role: 'assistant',
      provider: 'deepseek',
      content: [
        { type: 'reasoning', text: `think ${index}` },
        { type: 'tool-call', id: `c${index}`, name: 'echo', arguments: { text: `é${index}` } },
      ],
    }),
    deepFreeze({ role: 'tool', toolCallId: `c${index}`, content: [{ type: 'text', text: `out\u2028${index}` }] }),
  ] as Message[]
}

describe('the request body from cached pieces', () => {
  it('splices known JSON text exactly where JSON.stringify would write the value', () => {
    const value = { a: [1, 'x'], b: { c: null } }
    const body = {
      model: 'm',
      skipped: undefined,
      messages: [new JsonText(JSON.stringify(value)), { d: 2 }],
      tools: new JsonText('[]'),
    }
    expect(bodyText(body)).toBe(JSON.stringify({ model: 'm', messages: [value, { d: 2 }], tools: [] }))
  })

  it('sends the bytes a cold adapter sends, whatever the history did between requests', async () => {
    const warm = options()
    const history: Message[] = [deepFreeze({ role: 'user', content: [{ type: 'text', text: 'fix it' }] }) as Message]
    const mutable = { role: 'user', content: [{ type: 'text', text: 'before' }] } as Message
    // Each check is taken when its turn comes: what happens between requests is part of the test.
    const checks: Array<{ label: string; messages: () => Message[] }> = []
    for (let index = 0; index < 6; index++) {
      checks.push({
        label: `grown by step ${index}`,
        messages: () => {
          history.push(...step(index))
          return [...history]
        },
      })
    }
    checks.push({
      label: 'replaced in the middle (pruning)',
      messages: () => {
        history[3] = deepFreeze({
          role: 'tool',
          toolCallId: 'c1',
          content: [{ type: 'text', text: '[pruned]' }],
        }) as Message
        return [...history]
      },
    })
    checks.push({ label: 'mutable message', messages: () => [...history, mutable] })
    checks.push({
      label: 'mutable message changed',
      messages: () => {
        ;(mutable.content[0] as { text: string }).text = 'after'
        return [...history, mutable]
      },
    })
    const image = deepFreeze({
      role: 'user',
      content: [{ type: 'image', ref: 'sha256:00', mimeType: 'image/png' }],
    }) as unknown as Message
    checks.push({ label: 'with an image', messages: () => [...history, image] })
    checks.push({ label: 'shrunk (compaction)', messages: () => history.slice(0, 3) })
    checks.push({ label: 'grown again', messages: () => [...history.slice(0, 3), ...step(9)] })

    for (const check of checks) {
      const messages = check.messages()
      const sent = await bytes(warm, messages)
      expect(sent, check.label).toBe(await bytes(options(), messages))
      // The plain form, serialised whole: JSON.stringify(JSON.parse(x)) is x for x written by JSON.stringify.
      const plain = await plainWireMessages(dispatchOf(messages).request, options(), 'deepseek-chat')
      expect(JSON.stringify(JSON.parse(sent).messages), check.label).toBe(JSON.stringify(plain))
    }
    const last = JSON.parse(await bytes(warm, [...history, mutable]))
    expect(last.messages.at(-1)).toEqual({ role: 'user', content: 'after' })
  })
})
