// SIGKILL while a subagent runs (needs the built dist: the child process imports the packages), then
// cold resume in this process: the delegation is an unknown outcome, the child interrupted, and the
// child's own session is durable and names its parent.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { createHarness, dataOf, text } from './harness.js'

const fixture = fileURLToPath(new URL('./fixtures/crash-parent.mjs', import.meta.url))

it('after SIGKILL during a subagent run, resume reports the child as interrupted, never as done', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-sub-kill-'))
  const marker = join(dir, 'child-running')
  try {
    const proc = spawn(process.execPath, [fixture, dir, marker], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    proc.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    const started = Date.now()
    while (!existsSync(marker)) {
      if (proc.exitCode !== null || Date.now() - started > 30_000) throw new Error(`the child never ran:\n${stderr}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    const [parentId, childId] = readFileSync(marker, 'utf8').split(' ') as [string, string]
    const exited = proc.exitCode === null ? new Promise((resolve) => proc.once('exit', resolve)) : Promise.resolve()
    proc.kill('SIGKILL')
    await exited

    const { root, adapter } = await createHarness({ dir, route: () => text('I will check the database first.') })
    const parent = await root.sessionPersistence.resume(parentId)
    expect(dataOf(parent, 'tool/result').map((r) => r.code)).toEqual(['TOOL_OUTCOME_UNKNOWN'])
    expect(dataOf(parent, 'subagent/finished').map((f) => [f.outcome, f.synthetic])).toEqual([['interrupted', true]])
    expect(root.subagents.records(parent)[0]).toMatchObject({ childSession: childId, status: 'closed' })

    const child = await root.sessionPersistence.resume(childId)
    expect(child.header.parentSession).toBe(parentId)
    expect(dataOf(child, 'turn/end').map((d) => d.reason)).toEqual(['interrupted'])

    const agent = await root.agents.create({ session: parent })
    agent.followup('did the migration run?')
    await agent.whenIdle()
    const tool = adapter.dispatches[0]?.request.messages.find((message) => message.role === 'tool')
    expect(JSON.stringify(tool)).toMatch(/TOOL_OUTCOME_UNKNOWN/)
    await agent.dispose()
    await root.sessions.flush()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 60_000)
