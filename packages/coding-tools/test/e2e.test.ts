// A scripted model fixes a failing test in a temp git repo through the real agent loop, the real tool
// pipeline and the sandboxed execution world; then the test re-runs the project's tests itself.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AssistantMessage } from '@dsh/llm'
import { eventData, type Session } from '@dsh/session'
import { calls, startInProcess } from '@dsh/test-support/in-process'
import { afterEach, describe, expect, it } from 'vitest'
import { hasBwrap, mountWorld } from './harness.js'

const skip = !hasBwrap() && !process.env.CI
if (skip) console.warn('\n!!! bubblewrap is NOT usable on this machine: the end-to-end coding test is SKIPPED !!!\n')

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function repo(): string {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-')))
  dirs.push(ws)
  writeFileSync(join(ws, 'sum.mjs'), 'export function sum(a, b) {\n  return a - b\n}\n')
  writeFileSync(
    join(ws, 'test.mjs'),
    "import assert from 'node:assert/strict'\nimport { sum } from './sum.mjs'\n\nassert.equal(sum(2, 3), 5)\nconsole.log('ok: all tests pass')\n",
  )
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ws, stdio: 'pipe' })
  git('init', '-q')
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '.')
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'initial')
  return ws
}

async function boot(ws: string, script: AssistantMessage[]) {
  return startInProcess({ script, cwd: ws, after: (root) => mountWorld(root, ws) })
}

function resultsOf(session: Session) {
  const results = eventData(session.events, 'tool/result').map((data) => data.message)
  const text = (id: string) =>
    results
      .find((m) => m.toolCallId === id)
      ?.content.map((b) => (b.type === 'text' ? b.text : ''))
      .join('') ?? ''
  return { results, text }
}

describe.skipIf(skip)('end to end: a scripted model fixes a failing test', () => {
  it('reads, runs the failing test, edits the code, runs the tests green; the repo tests pass afterwards', async () => {
    const ws = repo()
    const { root, adapter } = await boot(ws, [
      calls(['c1', 'read', { path: 'test.mjs' }], ['c2', 'read', { path: 'sum.mjs' }]),
      calls(['c3', 'bash', { command: 'node test.mjs', description: 'Run the tests' }]),
      calls(['c4', 'edit', { path: 'sum.mjs', old_string: 'return a - b', new_string: 'return a + b' }]),
      calls(['c5', 'bash', { command: 'node test.mjs && git status --short', description: 'Run the tests again' }]),
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Fixed: sum() subtracted instead of adding.' }],
        finishReason: 'stop',
      },
    ])

    const agent = await root.agents.create({ cwd: ws })
    agent.followup('fix the failing test')
    await agent.whenIdle()

    const { results, text } = resultsOf(agent.session)
    expect(results.map((m) => [m.toolCallId, m.isError])).toEqual([
      ['c1', false],
      ['c2', false],
      ['c3', false],
      ['c4', false],
      ['c5', false],
    ])
    expect(text('c1')).toContain('    4\tassert.equal(sum(2, 3), 5)')
    expect(text('c3')).toMatch(/AssertionError[\s\S]*\[exit code: 1\]$/)
    expect(text('c4')).toContain('-  return a - b\n+  return a + b')
    expect(text('c5')).toBe('ok: all tests pass\n M sum.mjs')
    expect(agent.session.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
    // The model's tools were visible to it.
    expect(adapter.dispatches[0]?.request.tools?.map((t) => t.name)).toEqual(
      expect.arrayContaining([
        'bash',
        'edit',
        'glob',
        'grep',
        'job_kill',
        'job_list',
        'job_output',
        'ls',
        'read',
        'write',
      ]),
    )
    // The model was told its sandbox (a dynamic prompt section, logged as context).
    const context = agent.session.events.filter((e) => e.type === 'user/message' && e.data.origin === 'context')
    expect(JSON.stringify(context)).toContain(
      `Sandbox: workspace-write. bash and the file tools may write only to: ${ws}`,
    )
    // Confirm independently: the project's own tests pass now.
    expect(execFileSync('node', ['test.mjs'], { cwd: ws, encoding: 'utf8' })).toBe('ok: all tests pass\n')
    root.invariants.assert()
    await agent.dispose()
  })

  it('a write outside the workspace is denied, the retry with sandbox_permissions is approved once and logged', async () => {
    const ws = repo()
    const outside = mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : process.cwd(), 'dsh-outside-'))
    dirs.push(outside)
    const target = join(outside, 'notes.txt')
    const asked = {
      command: `echo hi > ${target}`,
      sandbox_permissions: 'danger-full-access',
      justification: 'the user asked for notes there',
    }
    const { root } = await boot(ws, [
      calls(['c1', 'bash', { command: `echo hi > ${target}` }]),
      calls(['c2', 'bash', asked]),
      calls(['c3', 'bash', { command: `echo again > ${target}` }]),
      { role: 'assistant', content: [{ type: 'text', text: 'done' }], finishReason: 'stop' },
    ])
    root.approval.answer((question) => (question.kind === 'escalation' ? 'allowed-once' : 'rejected'))
    const agent = await root.agents.create({ cwd: ws })
    agent.followup('write notes outside')
    await agent.whenIdle()
    const { text } = resultsOf(agent.session)
    expect(text('c1')).toMatch(/\[sandbox: denied by the workspace-write sandbox/)
    expect(text('c2')).toBe('(no output)')
    expect(text('c3')).toMatch(/\[sandbox: denied/)
    expect(readFileSync(target, 'utf8')).toBe('hi\n')
    const approvals = agent.session.events.filter((e) => e.type.startsWith('approval/')).map((e) => [e.type, e.data])
    expect(approvals).toMatchObject([
      [
        'approval/asked',
        {
          toolCallId: 'c2',
          toolName: 'bash',
          kind: 'escalation',
          details: { from: 'workspace-write', to: 'danger-full-access' },
        },
      ],
      ['approval/decided', { toolCallId: 'c2', decision: 'allowed-once' }],
    ])
    await agent.dispose()
  })

  it('a finished background job wakes its idle agent, which reads the output in a new turn', async () => {
    const ws = repo()
    const { root } = await boot(ws, [
      calls(['c1', 'bash', { command: 'sleep 0.2; echo built', run_in_background: true }]),
      { role: 'assistant', content: [{ type: 'text', text: 'started the build' }], finishReason: 'stop' },
      calls(['c2', 'job_output', { job_id: 'job-1' }]),
      { role: 'assistant', content: [{ type: 'text', text: 'the build finished' }], finishReason: 'stop' },
    ])
    const agent = await root.agents.create({ cwd: ws })
    agent.followup('build in the background')
    await agent.whenIdle()
    const owner = { sessionId: agent.session.id, agentId: agent.id }
    await root.jobs.wait('job-1', owner)
    // The notice arrives as a follow-up; wait for the second turn to finish.
    for (let i = 0; i < 250 && agent.session.events.filter((e) => e.type === 'turn/end').length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await agent.whenIdle()
    const { text } = resultsOf(agent.session)
    expect(text('c1')).toMatch(/^Started job-1 in the background/)
    expect(text('c2')).toBe('[job job-1 completed: exit code 0]\nbuilt')
    const notices = agent.session.events.filter(
      (e) => e.type === 'user/message' && JSON.stringify(e.data).includes('[job job-1 completed: exit code 0]'),
    )
    expect(notices).toHaveLength(1)
    await agent.dispose()
  })
})
