// OpenTelemetry, opt-in: a 3-step `dsh run` (the built CLI, the mock model) with DSH_TELEMETRY=on and
// OTEL_EXPORTER_OTLP_ENDPOINT pointed at an OTLP/HTTP receiver in this test exports one span tree per
// turn: turn > 3 steps > a model request each (GenAI attributes) and the tool calls. Off, the same run
// loads no @opentelemetry module (a preloaded import/require recorder says which were resolved).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

const recorder = fileURLToPath(new URL('./fixtures/record-imports.mjs', import.meta.url))

interface OtlpValue {
  stringValue?: string
  intValue?: number | string
  doubleValue?: number
  boolValue?: boolean
  arrayValue?: { values: OtlpValue[] }
}
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes: { key: string; value: OtlpValue }[]
  status?: { code?: number }
}

function plain(value: OtlpValue): unknown {
  if (value.arrayValue) return value.arrayValue.values.map(plain)
  if (value.intValue !== undefined) return Number(value.intValue)
  return value.stringValue ?? value.doubleValue ?? value.boolValue
}

const attrs = (span: OtlpSpan) => Object.fromEntries(span.attributes.map((a) => [a.key, plain(a.value)]))

let home: string
let project: string
let model: MockLlmServer
let receiver: Server
let endpoint: string
let spans: OtlpSpan[]

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-otel-'))
  project = join(home, 'project')
  mkdirSync(project, { recursive: true })
  writeFileSync(join(project, 'notes.txt'), 'secret-looking project text\n')
  model = await startMockLlmServer()
  spans = []
  receiver = createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8').on('data', (chunk: string) => {
      body += chunk
    })
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const payload = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }
        for (const resource of payload.resourceSpans)
          for (const scope of resource.scopeSpans) spans.push(...scope.spans)
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  endpoint = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`
})
afterEach(async () => {
  await model.close()
  await new Promise((resolve) => receiver.close(resolve))
  rmSync(home, { recursive: true, force: true })
})

function run(env: Record<string, string>) {
  const imports = join(home, 'imports.log')
  writeFileSync(imports, '')
  return runDsh(['run', '--cwd', project, 'look at the notes'], {
    home,
    modelUrl: model.url,
    env: { DSH_TEST_IMPORTS: imports, ...env },
    nodeArgs: ['--import', recorder],
  }).then(({ code, stderr }) => ({ code, stderr, imports: readFileSync(imports, 'utf8').split('\n').filter(Boolean) }))
}

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

function script() {
  model.enqueue(
    call('c1', 'bash', { command: 'echo listed' }),
    call('c2', 'read', { path: 'notes.txt' }),
    completionResponse({ text: 'The notes say hello.' }),
  )
}

function sessionId(): string {
  const [file] = readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
  return JSON.parse(readFileSync(join(home, 'sessions', file as string), 'utf8').split('\n')[0] as string).id
}

describe('OpenTelemetry traces', () => {
  it('exports turn > step > model request | tool call spans with GenAI attributes, no contents by default', async () => {
    script()
    const result = await run({ DSH_TELEMETRY: 'on', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint })
    expect(result.code, result.stderr).toBe(0)
    expect(result.imports.some((line) => line.includes('@opentelemetry/exporter-trace-otlp-http'))).toBe(true)
    const id = sessionId()
    const turns = spans.filter((span) => span.name === 'invoke_agent dsh')
    expect(turns).toHaveLength(1)
    const turn = turns[0] as OtlpSpan
    expect(turn.parentSpanId ?? '').toBe('')
    expect(attrs(turn)).toMatchObject({
      'session.id': id,
      'gen_ai.operation.name': 'invoke_agent',
      'dsh.turn.reason': 'completed',
    })
    const steps = spans.filter((span) => span.name === 'dsh.step')
    expect(steps).toHaveLength(3)
    for (const step of steps) expect(step.parentSpanId).toBe(turn.spanId)
    const requests = spans.filter((span) => span.name.startsWith('chat '))
    expect(requests).toHaveLength(3)
    expect(requests.map((span) => steps.findIndex((step) => step.spanId === span.parentSpanId)).sort()).toEqual([
      0, 1, 2,
    ])
    const log = readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => JSON.parse(line))
    const messages = log.filter((event) => event.type === 'assistant/message').map((event) => event.data.message)
    const header = log.find((event) => event.type === 'request/header').data.config
    for (const [index, span] of requests
      .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
      .entries()) {
      const message = messages[index]
      expect(attrs(span)).toMatchObject({
        'session.id': id,
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': header.provider,
        'gen_ai.request.model': header.model,
        'gen_ai.response.finish_reasons': [message.finishReason],
        'gen_ai.usage.input_tokens': message.usage.inputTokens,
        'gen_ai.usage.output_tokens': message.usage.outputTokens,
      })
      expect(attrs(span)['gen_ai.usage.cache_read.input_tokens']).toBe(message.usage.cacheHitTokens)
      // The model has no known price: no cost attribute (unknown is never 0).
      expect(attrs(span)).not.toHaveProperty('dsh.cost.usd')
    }
    const tools = spans.filter((span) => span.name.startsWith('execute_tool '))
    expect(tools.map((span) => attrs(span)['gen_ai.tool.name']).sort()).toEqual(['bash', 'read'])
    for (const tool of tools) {
      expect(steps.some((step) => step.spanId === tool.parentSpanId)).toBe(true)
      expect(attrs(tool)).toMatchObject({ 'session.id': id, 'dsh.tool.outcome': 'success' })
      expect(typeof attrs(tool)['dsh.tool.duration_ms']).toBe('number')
    }
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(1)
    // Contents stay out unless telemetry.content is on.
    expect(JSON.stringify(spans)).not.toContain('secret-looking project text')
    expect(JSON.stringify(spans)).not.toContain('look at the notes')
  })

  it('puts prompts and tool contents in the spans only with telemetry.content on', async () => {
    script()
    const result = await run({
      DSH_TELEMETRY: 'on',
      DSH_TELEMETRY_CONTENT: 'on',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    })
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.stringify(spans)).toContain('secret-looking project text')
    expect(JSON.stringify(spans)).toContain('look at the notes')
  })

  it('off (the default): the run loads no @opentelemetry module and exports nothing', async () => {
    script()
    const result = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint })
    expect(result.code, result.stderr).toBe(0)
    expect(result.imports).toEqual([])
    expect(spans).toEqual([])
  })
})
