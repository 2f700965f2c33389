// Language servers as `dsh run` users get them (base bundle rows, real typescript-language-server and
// pyright from the dev dependencies, mock model server): diagnostics arrive in the edit's own result,
// code_nav finds a definition, pyright reports a Python type error. Read back from the durable log.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
let ws: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-lsp-home-'))
  ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-lsp-ws-')))
  mkdirSync(join(ws, 'src'))
  writeFileSync(
    join(ws, 'tsconfig.json'),
    '{ "compilerOptions": { "strict": true, "module": "NodeNext" }, "include": ["src"] }\n',
  )
  writeFileSync(join(ws, 'src/math.ts'), 'export function add(a: number, b: number): number {\n  return a + b\n}\n')
  writeFileSync(join(ws, 'src/main.ts'), "import { add } from './math.js'\n\nexport const total: number = add(1, 2)\n")
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(ws, { recursive: true, force: true })
})

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

describe('language servers through dsh run', () => {
  it('edit returns the new type error, code_nav finds the definition, pyright reports a Python type error', {
    timeout: 240_000,
  }, async () => {
    server.enqueue(
      call('r1', 'read', { path: 'src/main.ts' }),
      call('e1', 'edit', { path: 'src/main.ts', old_string: 'total: number', new_string: 'total: string' }),
      call('n1', 'code_nav', { action: 'definition', path: 'src/main.ts', line: 3, symbol: 'add' }),
      call('w1', 'write', { path: 'app.py', content: 'count: str = 1\n' }),
      completionResponse({ text: 'done' }),
    )
    // Cold servers on a busy machine: a longer wait for the first diagnostics (the whole row restated).
    const patch = join(home, 'slow-lsp.yml')
    writeFileSync(
      patch,
      '- id: lsp\n  use: "@dsh/lsp/stdio"\n  config: { diagnosticsTimeoutMs: 90000, requestTimeoutMs: 90000, coldWaitMs: 90000 }\n',
    )
    const result = await runDsh(['--patch', patch, 'run', 'break it'], { home, cwd: ws, modelUrl: server.url })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    const results = new Map(
      eventData(durableEvents(home), 'tool/result').map((data) => [
        data.message.toolCallId,
        data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n'),
      ]),
    )
    expect(readFileSync(join(ws, 'src/main.ts'), 'utf8')).toContain('total: string')
    expect(results.get('e1')).toMatch(
      /\[typescript diagnostics for src\/main\.ts after this change: 1 error\]\nsrc\/main\.ts:3:14 error TS2322: Type 'number' is not assignable to type 'string'\./,
    )
    expect(results.get('n1')).toBe('src/math.ts:1:17  export function add(a: number, b: number): number {')
    expect(results.get('w1')).toMatch(
      /\[python diagnostics for app\.py after this change: 1 error\]\napp\.py:1:14 error reportAssignmentType: Type "Literal\[1\]" is not assignable to declared type "str"/,
    )
  })

  it('a cold server does not hold the edit: the result says diagnostics are coming, a later result brings them', {
    timeout: 240_000,
  }, async () => {
    server.enqueue(
      call('r1', 'read', { path: 'src/main.ts' }),
      call('e1', 'edit', { path: 'src/main.ts', old_string: 'total: number', new_string: 'total: string' }),
      // The model thinks for a while (the mock's delay applies per chunk: ~20 s): the server loads meanwhile.
      completionResponse({
        toolCalls: [{ id: 'r2', name: 'read', arguments: JSON.stringify({ path: 'src/math.ts' }) }],
        delayMs: 5_000,
      }),
      call('e2', 'edit', { path: 'src/math.ts', old_string: 'a + b', new_string: 'b + a' }),
      completionResponse({ text: 'done' }),
    )
    const patch = join(home, 'cold-lsp.yml')
    writeFileSync(
      patch,
      '- id: lsp\n  use: "@dsh/lsp/stdio"\n  config: { warm: false, coldWaitMs: 1, diagnosticsTimeoutMs: 90000, requestTimeoutMs: 90000 }\n',
    )
    const result = await runDsh(['--patch', patch, 'run', 'break it'], { home, cwd: ws, modelUrl: server.url })
    expect(result.code, result.stderr).toBe(0)
    const results = new Map(
      eventData(durableEvents(home), 'tool/result').map((data) => [
        data.message.toolCallId,
        data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n'),
      ]),
    )
    expect(results.get('e1')).toContain(
      'typescript is still loading the project; diagnostics for this file will come with a later result',
    )
    expect(results.get('e1')).not.toContain('no problems')
    expect(results.get('e2')).toMatch(
      /\[typescript diagnostics for src\/main\.ts \(an earlier change\) after this change: 1 error\]\nsrc\/main\.ts:3:14 error TS2322/,
    )
  })
})
