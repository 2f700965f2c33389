// Permission rules as a user writes them in settings.yaml, through the built `dsh run` with a mock
// model: a deny rule stops `rm` (the file is still there, the log names the rule), an ask rule holds a
// write with nobody to ask, a call no rule covers runs; a project's rules count only once trusted.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
let project: string
let model: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-rules-'))
  project = join(home, 'project')
  mkdirSync(project)
  writeFileSync(join(project, 'victim.txt'), 'keep me\n')
  model = await startMockLlmServer()
  const call = (id: string, name: string, args: object) => ({ id, name, arguments: JSON.stringify(args) })
  model.enqueue(
    completionResponse({
      toolCalls: [
        call('c1', 'bash', { command: 'rm victim.txt' }),
        call('c2', 'write', { path: 'notes/a.txt', content: 'held' }),
        call('c3', 'write', { path: 'other.txt', content: 'free' }),
      ],
    }),
    completionResponse({ text: 'done' }),
  )
})
afterEach(async () => {
  await model.close()
  rmSync(home, { recursive: true, force: true })
})

const results = () =>
  Object.fromEntries(
    eventData(durableEvents(home), 'tool/result').map((result) => [
      result.message.toolCallId,
      { error: result.message.isError, text: JSON.stringify(result.message.content) },
    ]),
  )

describe('permission rules', () => {
  it('user rules: deny wins over the sandbox allowing it, ask holds a write, the rest runs', async () => {
    writeFileSync(
      join(home, 'settings.yaml'),
      'permissions:\n  deny: ["Bash(rm:*)"]\n  ask: ["Write(notes/**)"]\n  allow: ["Bash"]\n',
    )
    const run = await runDsh(['run', 'tidy up'], { home, cwd: project, modelUrl: model.url })
    expect(run.code).toBe(0)
    expect(existsSync(join(project, 'victim.txt'))).toBe(true)
    expect(existsSync(join(project, 'notes', 'a.txt'))).toBe(false)
    expect(existsSync(join(project, 'other.txt'))).toBe(true)
    const byCall = results()
    expect(byCall.c1?.error).toBe(true)
    expect(byCall.c1?.text).toContain('denied by rule deny Bash(rm:*)')
    expect(byCall.c2?.error).toBe(true)
    const asked = eventData(durableEvents(home), 'approval/asked')
    expect(asked.map((question) => question.reason)).toEqual([expect.stringContaining('rule ask Write(notes/**)')])
  })

  it("a project's rules apply only in a trusted folder", async () => {
    mkdirSync(join(project, '.dsh'))
    writeFileSync(join(project, '.dsh', 'settings.yaml'), 'permissions:\n  deny: ["Bash(rm:*)"]\n')
    const untrusted = await runDsh(['run', 'tidy up'], { home, cwd: project, modelUrl: model.url })
    expect(untrusted.code).toBe(0)
    expect(existsSync(join(project, 'victim.txt'))).toBe(false)
    writeFileSync(join(project, 'victim.txt'), 'keep me\n')
    model.enqueue(
      completionResponse({ toolCalls: [{ id: 'c9', name: 'bash', arguments: '{"command":"rm victim.txt"}' }] }),
      completionResponse({ text: 'done' }),
    )
    expect((await runDsh(['trust'], { home, cwd: project })).code).toBe(0)
    rmSync(join(home, 'sessions'), { recursive: true, force: true })
    expect((await runDsh(['run', 'tidy up'], { home, cwd: project, modelUrl: model.url })).code).toBe(0)
    expect(existsSync(join(project, 'victim.txt'))).toBe(true)
  })

  it("reads the rules of a trusted project's .claude/settings.json too", async () => {
    mkdirSync(join(project, '.claude'))
    writeFileSync(join(project, '.claude', 'settings.json'), JSON.stringify({ permissions: { deny: ['Bash(rm:*)'] } }))
    expect((await runDsh(['trust'], { home, cwd: project })).code).toBe(0)
    expect((await runDsh(['run', 'tidy up'], { home, cwd: project, modelUrl: model.url })).code).toBe(0)
    expect(existsSync(join(project, 'victim.txt'))).toBe(true)
    expect(results().c1?.text).toContain(join(project, '.claude', 'settings.json'))
  })
})
