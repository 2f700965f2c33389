import { execFileSync } from 'node:child_process'
import { realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { ApprovalService, createStaticAnswerer } from '@dsh/agent/approval'
import { Context, HarnessError } from '@dsh/kernel'
import SessionService from '@dsh/session'
import { describe, expect, it } from 'vitest'
import BwrapSandbox from '../../src/sandbox/bwrap.js'
import { isStrictlyWider, requestEscalation, sandboxDenialHint } from '../../src/sandbox/index.js'
import LocalSandboxPolicy from '../../src/sandbox/policy.js'

async function setup(config: ConstructorParameters<typeof LocalSandboxPolicy>[1] = {}) {
  const root = new Context()
  await root.plugin(SessionService, { cwd: '/work' })
  await root.plugin(ApprovalService)
  await root.plugin(LocalSandboxPolicy, config)
  return root
}

describe('ctx.sandboxPolicy', () => {
  it('defaults to read-only and derives writable roots from the mode', async () => {
    const root = await setup({ workspaceRoot: '/work/main' })
    expect(root.sandboxPolicy.mode()).toBe('read-only')
    expect(root.sandboxPolicy.resolve()).toEqual({
      mode: 'read-only',
      workspaceRoot: '/work/main',
      writableRoots: [],
      secretPaths: expect.any(Array),
      protectedPaths: expect.arrayContaining([
        { path: '/work/main/.git/hooks', why: expect.stringContaining('runs code on git actions') },
        { path: '/work/main/.dsh', why: expect.stringContaining('configures the agent') },
      ]),
      network: 'on',
    })
    expect(root.sandboxPolicy.resolve(undefined, 'danger-full-access').protectedPaths).toEqual([])
    const ww = root.sandboxPolicy.resolve(undefined, 'workspace-write')
    expect(ww.writableRoots).toEqual([...new Set(['/work/main', realpathSync('/tmp'), realpathSync(tmpdir())])])
    expect(isStrictlyWider('danger-full-access', 'workspace-write')).toBe(true)
    expect(isStrictlyWider('read-only', 'read-only')).toBe(false)
  })

  it('switches a session durably with a sandbox/mode event, binding the preset approval policy', async () => {
    const root = await setup({ mode: 'workspace-write' })
    const session = root.sessions.create({ id: 's1', cwd: tmpdir() })
    expect(root.sandboxPolicy.mode('s1')).toBe('workspace-write')
    expect(root.sandboxPolicy.resolve('s1').workspaceRoot).toBe(realpathSync(tmpdir()))
    const changes: unknown[] = []
    root.on('sandbox/mode-changed', (change) => {
      changes.push(change)
    })
    root.sandboxPolicy.setMode('s1', 'danger-full-access')
    expect(session.events.at(-1)).toMatchObject({ type: 'sandbox/mode', data: { mode: 'danger-full-access' } })
    expect(root.approval.policy('s1')).toBe('never')
    expect(changes).toEqual([{ sessionId: 's1', mode: 'danger-full-access', previous: 'workspace-write' }])
    expect(() => root.sandboxPolicy.setMode('s1', 'yolo')).toThrow(HarnessError)
  })

  it('binds a child to its parent: clamped, logged, narrowed with the parent, and kept across a restore', async () => {
    const root = await setup({ mode: 'workspace-write' })
    root.sessions.create({ id: 'parent', cwd: tmpdir() })
    const child = root.sessions.create({ id: 'child', cwd: tmpdir() })
    root.sandboxPolicy.setMode('parent', 'workspace-write', { network: 'off' })
    const bound = root.sandboxPolicy.bind('child', 'parent')
    expect(bound.mode).toBe('workspace-write')
    expect(root.sandboxPolicy.setMode('child', 'danger-full-access', { network: 'on' })).toBe('workspace-write')
    expect(child.events.at(-1)).toMatchObject({
      type: 'sandbox/mode',
      data: { mode: 'workspace-write', network: 'off', requested: 'danger-full-access' },
    })
    expect(root.sandboxPolicy.resolve('child')).toMatchObject({ mode: 'workspace-write', network: 'off' })
    // A parent that narrows later narrows its live child.
    root.sandboxPolicy.setMode('parent', 'read-only')
    expect(root.sandboxPolicy.mode('child')).toBe('read-only')
    bound.dispose()
    // Restored elsewhere (no live parent): the bound its log records still holds.
    const other = await setup({ mode: 'danger-full-access' })
    other.sessions.restore(other.sessions.build(child.header, child.events as never))
    expect(other.sandboxPolicy.mode('child')).toBe('workspace-write')
    expect(other.sandboxPolicy.setMode('child', 'danger-full-access')).toBe('workspace-write')
  })

  it('clamps every session to the row ceiling (a dsh started as an ACP child)', async () => {
    const root = await setup({ mode: 'danger-full-access', ceiling: 'read-only', networkCeiling: 'off' })
    root.sessions.create({ id: 's1', cwd: tmpdir() })
    expect(root.sandboxPolicy.mode('s1')).toBe('read-only')
    expect(root.sandboxPolicy.setMode('s1', 'workspace-write', { network: 'on' })).toBe('read-only')
    expect(root.sandboxPolicy.network('s1')).toBe('off')
  })

  it('gives a resumed session its mode and its preset approval policy back from the log', async () => {
    const root = await setup({ mode: 'workspace-write' })
    const session = root.sessions.create({ id: 's1' })
    session.append('sandbox/mode', { mode: 'danger-full-access' })
    const other = await setup({ mode: 'workspace-write' })
    other.sessions.restore(other.sessions.build(session.header, session.events as never))
    expect(other.sandboxPolicy.mode('s1')).toBe('danger-full-access')
    expect(other.approval.policy('s1')).toBe('never')
  })

  it('rebuilds a session mode from its last sandbox/mode event (resume), without a switch in this process', async () => {
    const root = await setup({ mode: 'read-only' })
    const session = root.sessions.create({ id: 's2' })
    session.append('sandbox/mode', { mode: 'workspace-write' })
    expect(root.sandboxPolicy.mode('s2')).toBe('workspace-write')
  })
})

describe('escalation', () => {
  const request = (root: Context, requested: string, justification = 'the build writes to ~/.cache') => ({
    sessionId: 's1',
    toolCallId: 'c1',
    toolName: 'bash',
    current: root.sandboxPolicy.resolve('s1'),
    requested,
    justification,
    summary: 'Run `make`',
  })

  it('is refused when not strictly wider, unjustified, or not approved; approved once it succeeds once', async () => {
    const root = await setup({ mode: 'workspace-write' })
    const decided: unknown[] = []
    root.on('approval/decided', (d) => {
      decided.push(d)
    })
    expect(await requestEscalation(root, request(root, 'read-only'))).toMatchObject({
      ok: false,
      code: 'SANDBOX_ESCALATION_INVALID',
    })
    expect(await requestEscalation(root, request(root, 'danger-full-access', ' '))).toMatchObject({ ok: false })
    // No answerer: unavailable, fail closed.
    expect(await requestEscalation(root, request(root, 'danger-full-access'))).toMatchObject({
      ok: false,
      code: 'SANDBOX_ESCALATION_DENIED',
    })
    const dispose = root.approval.answer(createStaticAnswerer('allowed-once'))
    const granted = await requestEscalation(root, request(root, 'danger-full-access'))
    expect(granted).toMatchObject({
      ok: true,
      policy: { mode: 'danger-full-access', escalatedFrom: 'workspace-write' },
    })
    // The grant is for that one call: the session's own mode is unchanged.
    expect(root.sandboxPolicy.mode('s1')).toBe('workspace-write')
    expect(decided).toMatchObject([{ decision: 'unavailable' }, { decision: 'allowed-once', toolCallId: 'c1' }])
    dispose()
    root.approval.answer(createStaticAnswerer('rejected'))
    expect(await requestEscalation(root, request(root, 'danger-full-access'))).toMatchObject({ ok: false })
  })

  it('without an approval service is refused', async () => {
    const root = new Context()
    await root.plugin(LocalSandboxPolicy, { mode: 'read-only' })
    const outcome = await requestEscalation(root, {
      toolName: 'write',
      current: root.sandboxPolicy.resolve(),
      requested: 'workspace-write',
      justification: 'needed',
      summary: 'write x',
    })
    expect(outcome).toMatchObject({ ok: false, code: 'SANDBOX_ESCALATION_DENIED' })
    expect(sandboxDenialHint(root.sandboxPolicy.resolve())).toMatch(/^\[sandbox: denied by the read-only sandbox/)
  })
})

describe('ctx.sandbox (bwrap)', () => {
  it('wraps argv with a read-only root and writable binds; returns argv unchanged in full access', async () => {
    const root = new Context()
    await root.plugin(BwrapSandbox)
    const policy = {
      mode: 'workspace-write' as const,
      workspaceRoot: '/tmp',
      writableRoots: ['/tmp'],
      secretPaths: [],
      protectedPaths: [],
      network: 'on' as const,
    }
    let usable = false
    try {
      execFileSync('bwrap', ['--ro-bind', '/', '/', 'true'], { stdio: 'ignore' })
      usable = true
    } catch {}
    expect((await root.sandbox.availability()).usable).toBe(usable)
    if (usable) {
      const argv = await root.sandbox.confine(['bash', '-c', 'x'], policy, { cwd: '/tmp' })
      expect(argv.slice(0, 7)).toEqual(['bwrap', '--ro-bind', '/', '/', '--bind', '/tmp', '/tmp'])
      expect(argv.slice(-6)).toEqual(['--chdir', '/tmp', '--', 'bash', '-c', 'x'])
    }
    expect(await root.sandbox.confine(['a'], { ...policy, mode: 'danger-full-access' }, { cwd: '/' })).toEqual(['a'])
  })
})

describe('secret paths', () => {
  it('sees a .env file created in an ancestor after an earlier lookup (listings are reused only while unchanged)', async () => {
    const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = await import('node:fs')
    const { join } = await import('node:path')
    const { secretPaths } = await import('../../src/sandbox/secrets.js')
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-secrets-')))
    try {
      const workspace = join(root, 'project')
      mkdirSync(workspace)
      const input = { home: join(root, 'home'), workspace }
      expect(secretPaths(input)).not.toContain(join(root, '.env'))
      writeFileSync(join(root, '.env'), 'TOKEN=1\n')
      expect(secretPaths(input)).toContain(join(root, '.env'))
      rmSync(join(root, '.env'))
      expect(secretPaths(input)).not.toContain(join(root, '.env'))
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("lists the platform's browser profiles, the runtime directory and the agent sockets the environment names", async () => {
    const { mkdtempSync, mkdirSync, rmSync } = await import('node:fs')
    const { join } = await import('node:path')
    const { secretPaths, userRuntime } = await import('../../src/sandbox/secrets.js')
    const home = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-secrets-')))
    try {
      for (const dir of ['.mozilla', '.config/chromium', 'Library/Application Support/Google/Chrome']) {
        mkdirSync(join(home, dir), { recursive: true })
      }
      const workspace = join(home, 'project')
      expect(secretPaths({ home, workspace, platform: 'linux' })).toEqual(
        expect.arrayContaining([join(home, '.mozilla'), join(home, '.config/chromium')]),
      )
      expect(secretPaths({ home, workspace, platform: 'linux' })).not.toContain(join(home, 'Library'))
      expect(secretPaths({ home, workspace, platform: 'darwin' })).toContain(
        join(home, 'Library/Application Support/Google/Chrome'),
      )
      expect(secretPaths({ home, workspace, platform: 'darwin' })).not.toContain(join(home, '.mozilla'))
      const env = {
        SSH_AUTH_SOCK: '/tmp/ssh-x/agent.1',
        DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/7/bus,guid=1;unix:abstract=/tmp/dbus-y',
        GPG_AGENT_INFO: '/home/u/.gnupg/S.gpg-agent:1:1',
      }
      const runtime = userRuntime(env)
      expect(runtime).toEqual(
        expect.arrayContaining(['/tmp/ssh-x/agent.1', '/run/user/7/bus', '/home/u/.gnupg/S.gpg-agent']),
      )
      if (process.platform === 'linux') expect(runtime).toContain(`/run/user/${process.getuid?.()}`)
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
