// Presets from the command line: the built `dsh` as a child process (headless profile, every base row)
// against the mock model server. `dsh run --preset plan` offers no write/edit/bash, refuses a forced
// write, keeps its preset on resume and refuses another one after a turn; `dsh presets ls|show` list
// the presets and print an effective configuration with the provenance of each part.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type {} from '@dsh/presets'
import { eventData } from '@dsh/session'
import { completionResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import type {} from '@dsh/world/sandbox'
import { afterEach, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

const homes: string[] = []
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
})

const toolNames = (request: RecordedRequest) =>
  ((request.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((tool) => tool.function.name)

it('a plan session is offered no mutating tools, refuses a forced write, and keeps its preset on resume', async () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-presets-e2e-'))
  homes.push(home)
  let call = 0
  await using server = await startMockLlmServer({
    respond: () => {
      call++
      // The model forces a write it was never offered; then answers.
      if (call === 1) {
        return completionResponse({
          toolCalls: [{ id: 'w1', name: 'write', arguments: JSON.stringify({ path: 'x.txt', content: 'pwned' }) }],
        })
      }
      return completionResponse({ text: `answer ${call}` })
    },
  })
  const first = await runDsh(['run', '--preset', 'plan', '--output', 'json', 'plan the change'], {
    home,
    modelUrl: server.url,
  })
  expect(first.stderr).toBe('')
  expect(first.code).toBe(0)
  const { sessionId } = JSON.parse(first.stdout) as { sessionId: string }

  const offered = toolNames(server.requests[0] as RecordedRequest)
  expect(offered).toContain('read')
  expect(offered).toContain('grep')
  for (const mutating of ['write', 'edit', 'bash', 'job_kill']) expect(offered).not.toContain(mutating)
  expect(existsSync(join(home, 'x.txt'))).toBe(false)
  const log = durableEvents(home)
  expect(eventData(log, 'tool/result')[0]?.code).toBe('TOOL_NOT_ALLOWED')
  expect(eventData(log, 'preset/selected')).toEqual([{ name: 'plan', by: 'request', origin: 'shipped' }])
  expect(eventData(log, 'sandbox/mode')[0]).toMatchObject({ mode: 'read-only' })
  const system = (server.requests[0] as RecordedRequest).body as { messages: Array<{ role: string; content: string }> }
  expect(system.messages[0]?.content).toContain('# Planning session')

  // Resume: the preset is the log's, not a default.
  const resumed = await runDsh(['run', '--resume', sessionId, 'and now?'], { home, modelUrl: server.url })
  expect(resumed.code).toBe(0)
  const again = toolNames(server.requests.at(-1) as RecordedRequest)
  expect(again).toEqual(offered)
  expect(eventData(durableEvents(home), 'preset/selected')).toHaveLength(1)

  // Changing the preset of a session with turns is refused, and nothing is sent.
  const before = server.requests.length
  const refused = await runDsh(['run', '--resume', sessionId, '--preset', 'code', 'write it'], {
    home,
    modelUrl: server.url,
  })
  expect(refused.code).not.toBe(0)
  expect(refused.stderr).toContain(`runs with preset "plan" and already has turns`)
  expect(server.requests.length).toBe(before)
  expect(readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))).toHaveLength(1)
})

it('lists the presets this directory sees and shows one with where each part came from', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-presets-cli-'))
  homes.push(cwd)
  mkdirSync(join(cwd, '.dsh', 'presets', 'review'), { recursive: true })
  writeFileSync(
    join(cwd, '.dsh', 'presets', 'review', 'preset.yml'),
    'description: Reviews.\nmodel: deepseek:deepseek-v4-flash\ntools: { deny: ["job_*", bash] }\n',
  )
  const [listed, code, review, missing] = await Promise.all([
    runDsh(['presets', 'ls', '--json'], { home: cwd, modelUrl: 'http://127.0.0.1:9' }),
    runDsh(['presets', 'show', 'code'], { home: cwd, modelUrl: 'http://127.0.0.1:9' }),
    runDsh(['presets', 'show', 'review', '--json'], { home: cwd, modelUrl: 'http://127.0.0.1:9' }),
    runDsh(['presets', 'show', 'nope'], { home: cwd, modelUrl: 'http://127.0.0.1:9' }),
  ])
  expect(listed.code, listed.stderr).toBe(0)
  const rows = (JSON.parse(listed.stdout) as { presets: Array<{ name: string; origin: string; default: boolean }> })
    .presets
  expect(rows.map((row) => `${row.name}:${row.origin}${row.default ? ':default' : ''}`)).toEqual([
    'ask:shipped',
    'code:shipped:default',
    'minimal:shipped',
    'plan:shipped',
    'review:project',
  ])

  expect(code.code, code.stderr).toBe(0)
  const lines = code.stdout.split('\n')
  expect(lines[0]).toMatch(/^preset: code {2}# shipped: .*shipped\/code$/)
  expect(lines).toContain('model: deepseek:deepseek-v4-pro  # global: agent-loop row (profile)')
  expect(lines).toContain('permissionMode: workspace-write  # global: sandbox-policy row (profile)')
  expect(lines).toContain('tools:  # global: tool rows (profile)')
  expect(lines).toContain('  - base  # global: system prompt rows (profile)')
  expect(lines.find((line) => line.startsWith('  offered: '))).toMatch(/\bbash\b.*\bwrite\b/)

  expect(review.code, review.stderr).toBe(0)
  const file = join(cwd, '.dsh', 'presets', 'review', 'preset.yml')
  const described = JSON.parse(review.stdout)
  expect(described.model).toEqual({ value: 'deepseek:deepseek-v4-flash', from: 'preset', where: file })
  expect(described.tools.from).toBe('preset')
  expect(described.tools.value.hidden).toEqual(['bash', 'job_kill', 'job_list', 'job_output'])
  expect(described.permissionMode.from).toBe('global')

  expect(missing.code).not.toBe(0)
  expect(missing.stderr).toContain('no preset "nope"; available: ask, code, minimal, plan, review')
})

it('`dsh config set preset plan` makes new sessions plan sessions; a missing default names where it was set', async () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-presets-default-'))
  homes.push(home)
  await using server = await startMockLlmServer()
  const set = await runDsh(['config', 'set', 'preset', 'plan'], { home, modelUrl: server.url })
  expect(set.code, set.stderr).toBe(0)
  server.enqueue(completionResponse({ text: 'a plan' }))
  const run = await runDsh(['run', 'plan it'], { home, modelUrl: server.url })
  expect(run.code, run.stderr).toBe(0)
  expect(eventData(durableEvents(home), 'preset/selected')).toEqual([
    { name: 'plan', by: 'default', origin: 'shipped' },
  ])
  const offered = toolNames(server.requests[0] as RecordedRequest)
  expect(offered).toContain('read')
  for (const mutating of ['write', 'edit', 'bash']) expect(offered).not.toContain(mutating)

  // A default naming no preset stops the run before any request, and says where it was set.
  const before = server.requests.length
  const missing = await runDsh(['run', 'hi'], { home, modelUrl: server.url, env: { DSH_PRESET: 'nosuch' } })
  expect(missing.code).toBe(3)
  expect(missing.stderr).toContain('no preset "nosuch"; available: ask, code, minimal, plan')
  expect(missing.stderr).toContain('is the default preset from DSH_PRESET')
  expect(server.requests.length).toBe(before)
})
