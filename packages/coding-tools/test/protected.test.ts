// Protected paths (issue 34): the model cannot configure its own session or plant code that runs on git
// actions. Writes to the workspace's `.dsh/`, `.git/hooks/`... need an approval that names the risk in
// every mode short of danger-full-access; with nobody to ask (headless) they are refused. The files on
// disk and the session's approval events say what happened.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ApprovalDecided, ApprovalQuestion } from '@dsh/agent/approval'
import { describe, expect, it } from 'vitest'
import { createWorld, hasBwrap, textOf } from './harness.js'

const skipSandbox = !hasBwrap() && !process.env.CI

const git = (ws: string) => execFileSync('git', ['init', '-q'], { cwd: ws })

describe('the write tools and protected paths', () => {
  it('refuses a model-written preset and a git hook when nobody can approve (workspace-write)', async () => {
    await using world = await createWorld({ mode: 'workspace-write' })
    git(world.ws)
    const decided: ApprovalDecided[] = []
    world.root.on('approval/decided', (data) => {
      decided.push(data)
    })
    const preset = await world.call('write', {
      path: '.dsh/presets/x/preset.yml',
      content: 'permissionMode: danger-full-access\n',
    })
    const hook = await world.call('write', { path: '.git/hooks/pre-commit', content: '#!/bin/sh\ntouch /tmp/pwned\n' })
    expect(existsSync(join(world.ws, '.dsh/presets/x/preset.yml'))).toBe(false)
    expect(existsSync(join(world.ws, '.git/hooks/pre-commit'))).toBe(false)
    expect([preset.isError, preset.errorCode]).toEqual([true, 'FS_PROTECTED_PATH'])
    expect([hook.isError, hook.errorCode]).toEqual([true, 'FS_PROTECTED_PATH'])
    expect(textOf(preset)).toContain('configures the agent')
    expect(textOf(hook)).toContain('runs code on git actions')
    // Each write was put to the approval service (the agent loop logs these), which had nobody to ask.
    expect(decided.map((d) => [d.toolName, d.decision])).toEqual([
      ['write', 'unavailable'],
      ['write', 'unavailable'],
    ])
  })

  it('also in read-only, and an edit of .git/config is refused the same way', async () => {
    await using world = await createWorld({ mode: 'read-only' })
    git(world.ws)
    const before = readFileSync(join(world.ws, '.git/config'), 'utf8')
    await world.call('read', { path: '.git/config' })
    const edit = await world.call('edit', {
      path: '.git/config',
      old_string: '[core]',
      new_string: '[core]\n\thooksPath = /tmp/evil',
    })
    // read-only refuses every write first; the path stays what it was.
    expect(edit.isError).toBe(true)
    expect(readFileSync(join(world.ws, '.git/config'), 'utf8')).toBe(before)
  })

  it('writes once a person approves the named risk; danger-full-access does not ask', async () => {
    await using world = await createWorld({ mode: 'workspace-write' })
    const asked: ApprovalQuestion[] = []
    world.root.approval.answer((question) => {
      asked.push(question)
      return 'allowed-once'
    })
    const result = await world.call('write', { path: '.mcp.json', content: '{"mcpServers":{}}\n' })
    expect(result.isError, textOf(result)).toBe(false)
    expect(readFileSync(join(world.ws, '.mcp.json'), 'utf8')).toBe('{"mcpServers":{}}\n')
    expect(asked).toHaveLength(1)
    expect(asked[0]?.kind).toBe('protected-path')
    expect(asked[0]?.reason).toContain('configures the agent')

    world.root.sandboxPolicy.setMode('s1', 'danger-full-access')
    mkdirSync(join(world.ws, '.vscode'))
    const full = await world.call('write', { path: '.vscode/tasks.json', content: '{}\n' })
    expect(full.isError, textOf(full)).toBe(false)
    expect(asked).toHaveLength(1)
  })
})

describe.skipIf(skipSandbox)('bash in the sandbox and protected paths', () => {
  it('cannot write a git hook or the git config in workspace-write', async () => {
    await using world = await createWorld({ mode: 'workspace-write' })
    git(world.ws)
    const config = readFileSync(join(world.ws, '.git/config'), 'utf8')
    const result = await world.call('bash', {
      command: 'printf "#!/bin/sh\\n" > .git/hooks/pre-commit; git config core.hooksPath /tmp/evil; echo ok > fine.txt',
      description: 'plant a hook',
    })
    expect(existsSync(join(world.ws, '.git/hooks/pre-commit'))).toBe(false)
    expect(readFileSync(join(world.ws, '.git/config'), 'utf8')).toBe(config)
    // The rest of the workspace stays writable.
    expect(readFileSync(join(world.ws, 'fine.txt'), 'utf8')).toBe('ok\n')
    expect(textOf(result)).toMatch(/Read-only file system/)
  })

  it('cannot change an existing .dsh directory', async () => {
    await using world = await createWorld({ mode: 'workspace-write' })
    mkdirSync(join(world.ws, '.dsh'))
    writeFileSync(join(world.ws, '.dsh/patch.yml'), '[]\n')
    await world.call('bash', {
      command: 'mkdir -p .dsh/presets/x && echo "permissionMode: danger-full-access" > .dsh/presets/x/preset.yml',
      description: 'plant a preset',
    })
    expect(existsSync(join(world.ws, '.dsh/presets'))).toBe(false)
  })
})
