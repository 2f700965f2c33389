import { describe, expect, it } from 'vitest'
import { type AssistantMessage, MessageAssembler, messageToChunks, type StreamChunk } from '../src/index.js'

function assemble(chunks: StreamChunk[]): AssistantMessage {
  const assembler = new MessageAssembler()
  for (const chunk of chunks) assembler.push(chunk)
  return assembler.finish()
}

const call = (index: number, id: string, args: string): StreamChunk[] => [
  { type: 'tool-call-start', index, id, name: 'edit' },
  { type: 'tool-call-delta', index, argumentsDelta: args },
]

describe('the block assembler', () => {
  it('joins adjacent deltas into blocks in stream order and ignores chunks after finish', () => {
    const message = assemble([
      { type: 'start', provider: 'p', model: 'm' },
      { type: 'reasoning-delta', text: 'think ' },
      { type: 'reasoning-delta', text: 'more', signature: 'sig-1' },
      { type: 'text-delta', text: 'Hello' },
      { type: 'text-delta', text: '' },
      { type: 'text-delta', text: ' world' },
      ...call(0, 'c0', '{"a":1}'),
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } },
      { type: 'finish', reason: 'tool-calls' },
      { type: 'text-delta', text: 'late' },
    ])
    expect(message).toEqual({
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'think more', signature: 'sig-1' },
        { type: 'text', text: 'Hello world' },
        { type: 'tool-call', id: 'c0', name: 'edit', arguments: { a: 1 } },
      ],
      finishReason: 'tool-calls',
      usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 },
      provider: 'p',
      model: 'm',
    })
  })

  it('keeps invalid or non-object arguments as a recorded error; empty arguments are {}', () => {
    const message = assemble([
      ...call(0, 'bad', '{"a":'),
      ...call(1, 'array', '[1]'),
      { type: 'tool-call-start', index: 2, id: 'empty', name: 'noop' },
      { type: 'finish', reason: 'tool-calls' },
    ])
    expect(message.content).toEqual([
      expect.objectContaining({ id: 'bad', arguments: {}, rawArguments: '{"a":', argumentsError: expect.any(String) }),
      expect.objectContaining({ id: 'array', arguments: {}, rawArguments: '[1]', argumentsError: expect.any(String) }),
      { type: 'tool-call', id: 'empty', name: 'noop', arguments: {} },
    ])
  })

  it('drops incomplete tool calls on max-tokens and every tool call on error or abort', () => {
    const chunks = [
      { type: 'text-delta', text: 'x' },
      ...call(0, 'done', '{}'),
      ...call(1, 'cut', '{"path": "a'),
    ] as StreamChunk[]
    const truncated = assemble([...chunks, { type: 'finish', reason: 'max-tokens' }])
    expect(truncated.content.map((b) => (b.type === 'tool-call' ? b.id : b.type))).toEqual(['text', 'done'])
    const failed = assemble([
      ...chunks,
      { type: 'finish', reason: 'error', error: { code: 'NETWORK', message: 'cut' } },
    ])
    expect(failed).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'x' }],
      finishReason: 'error',
      error: { code: 'NETWORK', message: 'cut' },
    })
    expect(assemble(chunks)).toMatchObject({ finishReason: 'error', error: { code: 'MALFORMED_RESPONSE' } })
  })

  it('round-trips a message through messageToChunks', () => {
    const message: AssistantMessage = {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'r', signature: 's' },
        { type: 'text', text: 't' },
        { type: 'tool-call', id: 'a', name: 'n', arguments: { z: 1, a: [1, 2] } },
        { type: 'tool-call', id: 'b', name: 'n', arguments: {}, rawArguments: '{', argumentsError: 'x' },
      ],
      finishReason: 'tool-calls',
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2, cacheHitTokens: 0, cacheMissTokens: 1 },
      provider: 'deepseek',
      model: 'deepseek-v4-pro',
    }
    const back = assemble(messageToChunks(message))
    expect(back.content[3]).toMatchObject({ rawArguments: '{' })
    expect({ ...back, content: back.content.slice(0, 3) }).toEqual({ ...message, content: message.content.slice(0, 3) })
  })
})
