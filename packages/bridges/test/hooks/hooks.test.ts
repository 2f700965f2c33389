import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { UserMessage } from '@dsh/llm'
import { FolderTrust } from '@dsh/settings/trust'
import { describe, expect, it, vi } from 'vitest'
import { calls, createDsh, dataOf, tempDir, text, turn, types } from './harness.js'

// Real child processes on a shared, loaded machine: generous bounds, few slow steps.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 })

const userTexts = (messages: { message: UserMessage }[]) =>
  messages.map(({ message }) => message.content.map((block) => (block.type === 'text' ? block.text : '')).join(''))

describe('PreToolUse', () => {
  it('blocks a tool with exit 2: the body never runs, the model reads stderr, the run is logged', async () => {
    using dir = tempDir()
    const block = dir.script(
      'block.sh',
      `#!/bin/sh\ncat > "${dir.path}/stdin.json"\necho "rm is not allowed here" >&2\nexit 2\n`,
    )
    const { root, received } = await createDsh(
      { cwd: dir.path, hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: block }] }] } },
      [calls(['c1', 'bash', { command: 'rm -rf /' }], ['c2', 'write', { command: 'w' }]), text('ok')],
    )
    const agent = await turn(root, 'clean up')
    expect(received).toEqual([{ tool: 'write', command: 'w' }])
    const results = dataOf(agent.session, 'tool/result')
    expect(results[0]).toMatchObject({ code: 'DENIED', message: { toolCallId: 'c1', isError: true } })
    expect(JSON.stringify(results[0]?.message.content)).toContain('rm is not allowed here')
    expect(results[1]?.message.isError).toBe(false)
    const runs = dataOf(agent.session, 'hook/run')
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({
      event: 'PreToolUse',
      command: block,
      matcher: 'Bash',
      toolName: 'bash',
      toolCallId: 'c1',
      exitCode: 2,
      timedOut: false,
      decision: 'deny',
      reason: 'rm is not allowed here',
    })
    const stdin = JSON.parse(readFileSync(join(dir.path, 'stdin.json'), 'utf8'))
    expect(stdin).toMatchObject({
      session_id: agent.session.id,
      hook_event_name: 'PreToolUse',
      tool_name: 'Bash',
      tool_input: { command: 'rm -rf /' },
      tool_use_id: 'c1',
    })
    // The hook/run event sits between the call and its result in the durable log.
    const slice = types(agent.session).filter(
      (type) => type === 'tool/call' || type === 'tool/result' || type === 'hook/run',
    )
    expect(slice).toEqual(['tool/call', 'hook/run', 'tool/result', 'tool/call', 'tool/result'])
    await agent.dispose()
  })

  it('denies through JSON permissionDecision from project settings, and a hook allow never loosens a native deny', async () => {
    using dir = tempDir()
    const deny = dir.script(
      'deny.mjs',
      `process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'writes are frozen' } }))\n`,
    )
    const allow = dir.script(
      'allow.mjs',
      `process.stdout.write(JSON.stringify({ decision: 'approve', hookSpecificOutput: { permissionDecision: 'allow', updatedInput: { command: 'rewritten' } } }))\n`,
    )
    mkdirSync(join(dir.path, '.claude'))
    writeFileSync(
      join(dir.path, '.claude', 'settings.json'),
      JSON.stringify({
        hooks: { PreToolUse: [{ matcher: 'Edit|Write', hooks: [{ type: 'command', command: deny }] }] },
      }),
    )
    writeFileSync(
      join(dir.path, '.claude', 'settings.local.json'),
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'ba.*', hooks: [{ type: 'command', command: allow }] }] } }),
    )
    const saved = process.env.DSH_HOME
    process.env.DSH_HOME = join(dir.path, 'home')
    new FolderTrust(join(dir.path, 'home')).grant(dir.path)
    const { root, received } = await createDsh({ cwd: dir.path }, [
      calls(
        ['c1', 'write', { command: 'x' }],
        ['c2', 'bash', { command: 'original' }],
        ['c3', 'bash', { command: 'native-denied' }],
      ),
      text('ok'),
    ])
    if (saved === undefined) delete process.env.DSH_HOME
    else process.env.DSH_HOME = saved
    root.on('tools/pre-execute', async (call, next) =>
      call.args.command === 'native-denied' ? { action: 'deny', reason: 'native policy' } : next(),
    )
    const agent = await turn(root, 'go')
    // The allow hook neither rewrote the arguments nor overrode the native deny.
    expect(received).toEqual([{ tool: 'bash', command: 'original' }])
    const results = dataOf(agent.session, 'tool/result')
    expect(results.map((result) => result.code)).toEqual(['DENIED', undefined, 'DENIED'])
    expect(JSON.stringify(results[0]?.message.content)).toContain('writes are frozen')
    expect(JSON.stringify(results[2]?.message.content)).toContain('native policy')
    const runs = dataOf(agent.session, 'hook/run')
    expect(runs.map((run) => [run.toolCallId, run.decision, run.ignored])).toEqual([
      ['c1', 'deny', undefined],
      ['c2', 'allow', ['updatedInput']],
    ])
    await agent.dispose()
  })
})

describe('PostToolUse', () => {
  it('adds feedback as context but never rewrites the durable tool result', async () => {
    using dir = tempDir()
    const post = dir.script(
      'post.mjs',
      `let input = ''\nprocess.stdin.on('data', (c) => (input += c)).on('end', () => {\n  const event = JSON.parse(input)\n  process.stdout.write(JSON.stringify({ decision: 'block', reason: 'saw ' + event.tool_response.content, hookSpecificOutput: { additionalContext: 'lint found 2 warnings' } }))\n})\n`,
    )
    const { root } = await createDsh(
      { cwd: dir.path, hooks: { PostToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: post }] }] } },
      [calls(['c1', 'bash', { command: 'ls' }]), text('ok')],
    )
    const agent = await turn(root, 'go')
    const [result] = dataOf(agent.session, 'tool/result')
    expect(result?.message.content).toEqual([{ type: 'text', text: 'ran bash: ls' }])
    const texts = userTexts(dataOf(agent.session, 'user/message'))
    expect(texts).toEqual(['go', 'PostToolUse hook feedback: saw ran bash: ls', 'lint found 2 warnings'])
    expect(dataOf(agent.session, 'hook/run')).toMatchObject([{ event: 'PostToolUse', decision: 'block' }])
    await agent.dispose()
  })
})

describe('UserPromptSubmit', () => {
  it('blocks a prompt with exit 2 (nothing reaches the model) and adds plain stdout as context otherwise', async () => {
    using dir = tempDir()
    const gate = dir.script(
      'gate.mjs',
      `let input = ''\nprocess.stdin.on('data', (c) => (input += c)).on('end', () => {\n  const { prompt } = JSON.parse(input)\n  if (prompt.includes('secret')) { process.stderr.write('no secrets in prompts'); process.exit(2) }\n  process.stdout.write('Current branch: main')\n})\n`,
    )
    const { root } = await createDsh(
      { cwd: dir.path, hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: gate }] }] } },
      [text('answered')],
    )
    const blocked = await turn(root, 'here is my secret')
    expect(dataOf(blocked.session, 'user/message')).toEqual([])
    expect(dataOf(blocked.session, 'turn/end')).toEqual([
      { reason: 'blocked', message: 'prompt blocked by a hook: no secrets in prompts' },
    ])
    const ok = await turn(root, 'hello')
    expect(userTexts(dataOf(ok.session, 'user/message'))).toEqual(['hello', 'Current branch: main'])
    expect(dataOf(ok.session, 'turn/end')).toEqual([{ reason: 'completed' }])
  })
})

describe('Stop', () => {
  it('keeps the turn going on decision "block" (once, guarded by stop_hook_active)', async () => {
    using dir = tempDir()
    const stop = dir.script(
      'stop.mjs',
      `let input = ''\nprocess.stdin.on('data', (c) => (input += c)).on('end', () => {\n  const event = JSON.parse(input)\n  if (!event.stop_hook_active) process.stdout.write(JSON.stringify({ decision: 'block', reason: 'run the tests first' }))\n})\n`,
    )
    const { root } = await createDsh(
      { cwd: dir.path, hooks: { Stop: [{ hooks: [{ type: 'command', command: stop }] }] } },
      [text('first answer'), text('tests pass')],
    )
    const agent = await turn(root, 'fix it')
    expect(userTexts(dataOf(agent.session, 'user/message'))).toEqual([
      'fix it',
      'Stop hook feedback: run the tests first',
    ])
    expect(dataOf(agent.session, 'assistant/message')).toHaveLength(2)
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'completed' }])
    expect(dataOf(agent.session, 'hook/run').map((run) => run.decision)).toEqual(['block', 'none'])
  })

  it('stops on continue:false even when the hook also says block', async () => {
    using dir = tempDir()
    const stop = dir.script(
      'stop.sh',
      `#!/bin/sh\ncat >/dev/null\necho '{"continue": false, "stopReason": "budget spent", "decision": "block", "reason": "more"}'\n`,
    )
    const { root } = await createDsh(
      { cwd: dir.path, hooks: { Stop: [{ hooks: [{ type: 'command', command: stop }] }] } },
      [text('done'), text('never')],
    )
    const agent = await turn(root, 'go')
    expect(dataOf(agent.session, 'assistant/message')).toHaveLength(1)
    expect(dataOf(agent.session, 'turn/end')).toEqual([{ reason: 'completed' }])
    expect(dataOf(agent.session, 'hook/run')).toMatchObject([
      { event: 'Stop', decision: 'stop', reason: 'budget spent' },
    ])
  })

  it('a PreToolUse continue:false denies the call and ends the turn before the next request', async () => {
    using dir = tempDir()
    const halt = dir.script(
      'halt.sh',
      `#!/bin/sh\ncat >/dev/null\necho '{"continue": false, "stopReason": "halt requested"}'\n`,
    )
    const { root, received } = await createDsh(
      { cwd: dir.path, hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: halt }] }] } },
      [calls(['c1', 'bash', { command: 'x' }]), text('never')],
    )
    const agent = await turn(root, 'go')
    expect(received).toEqual([])
    expect(dataOf(agent.session, 'assistant/message')).toHaveLength(1)
    expect(dataOf(agent.session, 'turn/end')).toEqual([
      { reason: 'blocked', message: 'stopped by a hook: halt requested' },
    ])
  })
})

describe('hook processes', () => {
  it('reads the user settings file; a hook failing with another exit code is logged and blocks nothing', async () => {
    using dir = tempDir()
    const failing = dir.script('fail.sh', '#!/bin/sh\ncat >/dev/null\necho "linter crashed" >&2\nexit 1\n')
    const userSettings = join(dir.path, 'user-settings.json')
    writeFileSync(
      userSettings,
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: failing }] }] } }),
    )
    const { root, received } = await createDsh({ cwd: dir.path, user: userSettings }, [
      calls(['c1', 'bash', { command: 'x' }]),
      text('ok'),
    ])
    const agent = await turn(root, 'go')
    expect(received).toEqual([{ tool: 'bash', command: 'x' }])
    expect(dataOf(agent.session, 'hook/run')).toMatchObject([
      { source: userSettings, exitCode: 1, decision: 'error', stderr: 'linter crashed\n' },
    ])
    await agent.dispose()
  })

  it('kills the whole process group on timeout and logs it as a non-blocking error', async () => {
    using dir = tempDir()
    const pidFile = join(dir.path, 'child.pid')
    const slow = dir.script('slow.sh', `#!/bin/sh\nsleep 30 &\necho $! > "${pidFile}"\nwait\n`)
    const { root, received } = await createDsh(
      { cwd: dir.path, hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: slow, timeout: 0.5 }] }] } },
      [calls(['c1', 'bash', { command: 'x' }]), text('ok')],
    )
    const started = Date.now()
    const agent = await turn(root, 'go')
    expect(Date.now() - started).toBeLessThan(8_000)
    expect(received).toEqual([{ tool: 'bash', command: 'x' }])
    expect(dataOf(agent.session, 'hook/run')).toMatchObject([{ timedOut: true, decision: 'error' }])
    const pid = Number(readFileSync(pidFile, 'utf8'))
    // Gone, or a zombie waiting for a reaper that is not us (its process group was killed).
    const alive = () => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
      } catch {
        return false
      }
    }
    for (let i = 0; i < 40 && alive(); i++) await new Promise((resolve) => setTimeout(resolve, 25))
    expect(alive()).toBe(false)
    expect(existsSync(pidFile)).toBe(true)
  })
})
