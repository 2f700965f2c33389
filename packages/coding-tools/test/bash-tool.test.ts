import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createStaticAnswerer } from '@dsh/agent/approval'
import { groupMembers } from '@dsh/world/subprocess/local'
import { describe, expect, it } from 'vitest'
import { createWorld, hasBwrap, textOf } from './harness.js'

// In CI the sandbox tests always run (and fail without bubblewrap); elsewhere a missing bwrap skips loudly.
const skip = !hasBwrap() && !process.env.CI
if (skip) console.warn('\n!!! bubblewrap is NOT usable on this machine: the bash tool tests are SKIPPED !!!\n')

const outside = () => mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : process.cwd(), 'dsh-outside-'))

describe.skipIf(skip)('bash tool (sandboxed, real bubblewrap)', () => {
  it('returns output with exit-code and timeout status lines', async () => {
    await using world = await createWorld()
    const ok = await world.call('bash', { command: 'echo hello; echo oops >&2', description: 'Say hello' })
    expect(ok).toMatchObject({
      isError: false,
      presentation: { kind: 'terminal', title: 'Say hello', command: 'echo hello; echo oops >&2' },
    })
    expect(textOf(ok)).toBe('hello\noops')
    expect(textOf(await world.call('bash', { command: 'exit 3' }))).toBe('(no output)\n[exit code: 3]')
    const slow = await world.call('bash', { command: 'echo started; sleep 30', timeout: 300 })
    expect(textOf(slow)).toBe('started\n[timed out after 300ms: the process tree was killed]')
    expect(world.root.subprocess.live()).toHaveLength(0)
    expect(textOf(await world.call('bash', { command: 'pwd' }))).toBe(world.ws)
  })

  it('says a write outside the workspace was a sandbox denial; escalation needs approval and lasts one call', async () => {
    await using world = await createWorld()
    const out = outside()
    try {
      const denied = await world.call('bash', { command: `touch ${out}/x` })
      const text = textOf(denied)
      expect(text).toMatch(/Read-only file system/)
      expect(text).toMatch(
        /\[exit code: 1\]\n\[sandbox: denied by the workspace-write sandbox; writable: .*sandbox_permissions/,
      )
      expect(existsSync(join(out, 'x'))).toBe(false)

      const asked = {
        command: `touch ${out}/x`,
        sandbox_permissions: 'danger-full-access',
        justification: 'the user asked to touch it',
      }
      const refused = await world.call('bash', asked)
      expect(refused).toMatchObject({ isError: true, errorCode: 'SANDBOX_ESCALATION_DENIED' })
      expect(existsSync(join(out, 'x'))).toBe(false)
      const decided = world.session.events.length
      world.root.approval.answer(createStaticAnswerer('allowed-once'))
      expect(textOf(await world.call('bash', asked))).toBe('(no output)')
      expect(existsSync(join(out, 'x'))).toBe(true)
      expect(textOf(await world.call('bash', { command: `touch ${out}/y` }))).toMatch(/\[sandbox: denied/)
      expect(world.session.events.length).toBe(decided)
      const narrower = await world.call('bash', {
        command: 'true',
        sandbox_permissions: 'workspace-write',
        justification: 'x',
      })
      expect(textOf(narrower)).toMatch(/^\[escalation refused\] sandbox_permissions "workspace-write" is not wider/)
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  })

  it('writes in the workspace and temp dirs work; read-only mode refuses them with the marker', async () => {
    await using world = await createWorld()
    expect(textOf(await world.call('bash', { command: 'echo data > f.txt && cat f.txt' }))).toBe('data')
    expect(readFileSync(join(world.ws, 'f.txt'), 'utf8')).toBe('data\n')
    world.root.sandboxPolicy.setMode('s1', 'read-only')
    const denied = textOf(await world.call('bash', { command: 'echo more > g.txt' }))
    expect(denied).toMatch(/\[sandbox: denied by the read-only sandbox; writable: nothing\]/)
    expect(existsSync(join(world.ws, 'g.txt'))).toBe(false)
  })

  it('runs in the background as a job owned by the caller: output cursor, list, kill, identity', async () => {
    await using world = await createWorld()
    const started = textOf(
      await world.call('bash', { command: 'echo one; sleep 0.3; echo two; sleep 30', run_in_background: true }),
    )
    expect(started).toMatch(/^Started job-1 in the background: echo one/)
    const owner = { sessionId: 's1', agentId: 'a1' }
    for (let i = 0; i < 500 && world.root.jobs.get('job-1', owner).outputBytes < 8; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(textOf(await world.call('job_output', { job_id: 'job-1' }))).toBe('[job job-1 running]\none\ntwo')
    expect(textOf(await world.call('job_output', { job_id: 'job-1' }))).toBe('[job job-1 running]\n(no new output)')
    expect(textOf(await world.call('job_list', {}))).toBe(
      '[job job-1 running] 0 unread bytes: echo one; sleep 0.3; echo two; sleep 30',
    )
    // Another agent of the same session does not see it.
    const foreign = await world.call('job_output', { job_id: 'job-1' }, { agentId: 'a2' })
    expect(foreign).toMatchObject({ isError: true, errorCode: 'JOB_NOT_FOUND' })
    expect(textOf(foreign)).toMatch(/^\[no job job-1\]/)
    expect(textOf(await world.call('job_list', {}, { agentId: 'a2' }))).toBe('No background jobs.')
    const pid = world.root.subprocess.live()[0]?.pid as number
    expect(textOf(await world.call('job_kill', { job_id: 'job-1' }))).toMatch(/^\[job job-1 killed\]/)
    expect(groupMembers(pid)).toBe(0)
    const waited = textOf(await world.call('bash', { command: 'sleep 0.2; echo late', run_in_background: true }))
    expect(waited).toMatch(/^Started job-2/)
    expect(textOf(await world.call('job_output', { job_id: 'job-2', wait_ms: 10000 }))).toMatch(
      /^\[job job-2 (running|completed: exit code 0)\]\nlate$/,
    )
    const done = textOf(await world.call('bash', { command: 'echo fin; exit 2', run_in_background: true }))
    expect(done).toMatch(/^Started job-3/)
    const info = await world.root.jobs.wait('job-3', owner)
    expect(info).toMatchObject({ status: 'failed', summary: 'exit code 2' })
    expect(textOf(await world.call('job_output', { job_id: 'job-3' }))).toBe('[job job-3 failed: exit code 2]\nfin')
  })

  it('background jobs belong to the registry: unloading the bash tool does not stop them', async () => {
    await using world = await createWorld()
    await world.call('bash', { command: 'sleep 30', run_in_background: true })
    await world.fibers.bash.dispose()
    expect(world.root.tools.get('bash')).toBeUndefined()
    expect(world.root.jobs.list({ sessionId: 's1', agentId: 'a1' })[0]?.status).toBe('running')
    await world.root.jobs.kill('job-1', { sessionId: 's1', agentId: 'a1' })
  })

  it('fails closed when bubblewrap is unusable and nobody can approve: the command is not run and the model is told why', async () => {
    await using world = await createWorld({ bwrap: '/nonexistent/bwrap' })
    const result = await world.call('bash', { command: 'touch ran.txt' })
    expect(result).toMatchObject({ isError: true, errorCode: 'SANDBOX_UNAVAILABLE' })
    expect(textOf(result)).toMatch(
      /^\[sandbox unavailable: bubblewrap .* not installed\] The command was not run: without a sandbox each command needs the user's approval \(unavailable\)\. Headless: rerun with --yes/,
    )
    expect(existsSync(join(world.ws, 'ran.txt'))).toBe(false)
  })

  it('without a usable sandbox asks once per bash call; an approved call runs, a rejected one does not', async () => {
    await using world = await createWorld({ bwrap: '/nonexistent/bwrap' })
    const asked: string[] = []
    let next: 'allowed-once' | 'rejected' = 'allowed-once'
    world.root.approval.answer((question) => {
      asked.push(`${question.kind}: ${question.summary}`)
      return { decision: next }
    })
    expect(textOf(await world.call('bash', { command: 'echo one > one.txt; echo ok' }))).toBe('ok')
    expect(textOf(await world.call('bash', { command: 'echo two > two.txt; echo ok' }))).toBe('ok')
    next = 'rejected'
    const refused = await world.call('bash', { command: 'touch three.txt' })
    expect(refused).toMatchObject({ isError: true, errorCode: 'SANDBOX_UNAVAILABLE' })
    expect(asked).toEqual([
      'unsandboxed: Run without a sandbox: echo one > one.txt; echo ok',
      'unsandboxed: Run without a sandbox: echo two > two.txt; echo ok',
      'unsandboxed: Run without a sandbox: touch three.txt',
    ])
    expect(readFileSync(join(world.ws, 'one.txt'), 'utf8')).toBe('one\n')
    expect(existsSync(join(world.ws, 'two.txt'))).toBe(true)
    expect(existsSync(join(world.ws, 'three.txt'))).toBe(false)
  })
})
