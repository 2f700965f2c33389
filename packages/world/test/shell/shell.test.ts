import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, HarnessError } from '@dsh/kernel'
import BwrapSandbox from '@dsh/world/sandbox/bwrap'
import LocalSandboxPolicy from '@dsh/world/sandbox/policy'
import LocalSubprocess from '@dsh/world/subprocess/local'
import { afterEach, describe, expect, it } from 'vitest'
import LocalBash from '../../src/shell/bash-local.js'
import SandboxBash from '../../src/shell/bash-sandbox.js'
import { statusMarkers } from '../../src/shell/index.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const temp = (parent = tmpdir()) => {
  const dir = realpathSync(mkdtempSync(join(parent, 'dsh-shell-')))
  dirs.push(dir)
  return dir
}

function hasBwrap(): boolean {
  try {
    execFileSync('bwrap', ['--ro-bind', '/', '/', 'true'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const bwrap = hasBwrap()
// In CI the sandbox tests always run (and fail without bubblewrap); elsewhere a missing bwrap skips loudly.
const skipSandbox = !bwrap && !process.env.CI
if (skipSandbox)
  console.warn('\n!!! bubblewrap is NOT usable on this machine: the sandboxed shell tests are SKIPPED !!!\n')

describe('ctx.shell (bash-local)', () => {
  async function setup() {
    const root = new Context()
    await root.plugin(LocalSubprocess)
    await root.plugin(LocalBash, { graceMs: 100 })
    return root
  }

  it('returns exit codes and timeouts as results with markers', async () => {
    const root = await setup()
    const fail = await root.shell.run(root.shell.resolve({ command: 'echo no; exit 4' }))
    expect(fail).toMatchObject({ exitCode: 4, timedOut: false, aborted: false, sandboxDenied: false })
    expect(fail.output.text).toBe('no\n')
    expect(statusMarkers(fail, 1000)).toEqual(['[exit code: 4]'])
    const spec = root.shell.resolve({ command: 'bash -c \'trap "" TERM; sleep 30\' & sleep 30', timeoutMs: 200 })
    const started = Date.now()
    const slow = await root.shell.run(spec)
    expect(Date.now() - started).toBeLessThan(5000)
    expect(slow.timedOut).toBe(true)
    expect(statusMarkers(slow, spec.timeoutMs)[0]).toBe('[timed out after 200ms: the process tree was killed]')
  })

  it('marks an aborted command and rejects only infrastructure failures', async () => {
    const root = await setup()
    const controller = new AbortController()
    const running = root.shell.run(root.shell.resolve({ command: 'sleep 30', signal: controller.signal }))
    setTimeout(() => controller.abort(), 50)
    expect(await running).toMatchObject({ aborted: true, timedOut: false })
    await expect(
      root.shell.run(root.shell.resolve({ command: 'true', workdir: '/nonexistent-dir' })),
    ).rejects.toSatisfy((error) => HarnessError.is(error, 'SUBPROCESS_SPAWN_FAILED'))
    expect(() => root.shell.resolve({ command: ' ' })).toThrow(/non-empty/)
  })

  it('passes trusted variables and scrubs secrets from the inherited environment', async () => {
    const root = await setup()
    process.env.DSH_TEST_SECRET_TOKEN = 'leak'
    try {
      const result = await root.shell.run(
        root.shell.resolve({
          command: 'echo "$DSH_SESSION_ID:$DSH_TEST_SECRET_TOKEN:$PAGER"',
          env: { DSH_SESSION_ID: 's1' },
        }),
      )
      expect(result.output.text).toBe('s1::cat\n')
    } finally {
      delete process.env.DSH_TEST_SECRET_TOKEN
    }
  })
})

describe.skipIf(skipSandbox)('ctx.shell (bash-sandbox, real bubblewrap)', () => {
  async function setup(mode: 'read-only' | 'workspace-write' | 'danger-full-access', command?: string) {
    const ws = temp()
    const root = new Context()
    await root.plugin(LocalSubprocess)
    await root.plugin(LocalSandboxPolicy, { mode, workspaceRoot: ws })
    await root.plugin(BwrapSandbox, command ? { command } : {})
    await root.plugin(SandboxBash, { cwd: ws, graceMs: 100 })
    return { root, ws }
  }
  const outside = () => temp(existsSync('/var/tmp') ? '/var/tmp' : process.cwd())

  it('workspace-write: writes in the workspace, cannot write outside, and says it was the sandbox', async () => {
    const { root, ws } = await setup('workspace-write')
    const out = outside()
    const inside = await root.shell.run(root.shell.resolve({ command: 'echo hi > in.txt && cat in.txt' }))
    expect(inside).toMatchObject({ exitCode: 0, sandbox: 'workspace-write', sandboxDenied: false })
    expect(readFileSync(join(ws, 'in.txt'), 'utf8')).toBe('hi\n')
    const denied = await root.shell.run(root.shell.resolve({ command: `echo x > ${out}/x.txt` }))
    expect(denied.exitCode).not.toBe(0)
    expect(denied.sandboxDenied).toBe(true)
    expect(denied.output.text).toMatch(/Read-only file system/)
    expect(existsSync(join(out, 'x.txt'))).toBe(false)
  })

  it('read-only refuses writes even in the workspace; an escalated policy widens one call', async () => {
    const { root, ws } = await setup('read-only')
    const denied = await root.shell.run(root.shell.resolve({ command: 'touch f' }))
    expect(denied).toMatchObject({ sandbox: 'read-only', sandboxDenied: true })
    expect(existsSync(join(ws, 'f'))).toBe(false)
    const wide = root.sandboxPolicy.resolve(undefined, 'workspace-write')
    const ok = await root.shell.run(root.shell.resolve({ command: 'touch f', policy: wide }))
    expect(ok.exitCode).toBe(0)
    expect(existsSync(join(ws, 'f'))).toBe(true)
  })

  it('kills the sandboxed tree on timeout', async () => {
    const { root } = await setup('workspace-write')
    const result = await root.shell.run(
      root.shell.resolve({ command: "trap '' TERM; sleep 30 & sleep 30", timeoutMs: 200 }),
    )
    expect(result.timedOut).toBe(true)
    expect(root.subprocess.live()).toHaveLength(0)
  })

  it('fails closed when bubblewrap is unusable, except in danger-full-access', async () => {
    const { root } = await setup('workspace-write', '/nonexistent/bwrap')
    await expect(root.shell.run(root.shell.resolve({ command: 'echo never' }))).rejects.toSatisfy((error) =>
      HarnessError.is(error, 'SANDBOX_UNAVAILABLE'),
    )
    const full = await setup('danger-full-access', '/nonexistent/bwrap')
    const result = await full.root.shell.run(full.root.shell.resolve({ command: 'echo free' }))
    expect(result).toMatchObject({ exitCode: 0, sandbox: 'danger-full-access' })
  })
})
