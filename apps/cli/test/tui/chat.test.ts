// The interactive chat as a person uses it: the built `dsh` in a pseudo-terminal, read off the screen
// and out of the durable session log and the files on disk.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type AnySessionEvent, isEvent } from '@dsh/session'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Fixture, fixture, ownBells } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  id,
  name,
  arguments: JSON.stringify(args),
})
const typed = (events: AnySessionEvent[]) =>
  events.flatMap((e) => (isEvent(e, 'user/message') && !e.data.origin ? [e.data.message.content] : []))

describe('dsh (the terminal chat)', () => {
  it('opens with a first prompt, streams the answer as Markdown, shows the footer, and exits on Ctrl-D', async () => {
    f.server.enqueue(
      completionResponse({ text: ['# Hello\n\nThis is **bold** and `code`.\n\n', '```js\nconst x = 1\n```\n'] }),
    )
    const screen = f.open(['say', 'hi'])
    await screen.waitFor('const x = 1')
    await screen.waitFor(/deepseek.* · preset code · workspace-write · \d+ tokens \(\d+%\)/)
    await screen.waitFor(/session [0-9a-f-]{36}/) // on the footer's second line when the first is full
    const shown = screen.text()
    expect(shown).toContain('› say hi')
    expect(shown).toContain('This is bold and code.') // Markdown markers are rendered, not printed
    expect(shown).not.toContain('**bold**')
    const events = f.log()
    const header = events.find((e) => isEvent(e, 'user/message'))
    expect(header).toBeDefined()
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    expect(typed(f.log())).toEqual([[{ type: 'text', text: 'say hi' }]])
    expect(screen.raw()).toMatch(/session [0-9a-f-]{36} saved; continue it with: dsh --resume/)
  })

  it('shows a tool call growing into its result and asks for an escalation inline: y allows, n rejects', async () => {
    const escalate = { sandbox_permissions: 'workspace-write', justification: 'the user asked for it' }
    f.server.enqueue(
      completionResponse({ toolCalls: [call('c1', 'write', { path: 'yes.txt', content: 'hello\n', ...escalate })] }),
      completionResponse({ toolCalls: [call('c2', 'write', { path: 'no.txt', content: 'nope\n', ...escalate })] }),
      completionResponse({ text: 'Wrote one of them.' }),
    )
    const screen = f.open(['--permission-mode', 'read-only', 'write', 'two', 'files'])
    await screen.waitFor('Esc stop the turn') // the prompt's last line: the whole prompt is drawn
    expect(screen.text()).toContain('y allow once')
    // A bell of its own, not the terminator of an OSC sequence (a title, a hyperlink).
    expect(ownBells(screen.raw())).toBeGreaterThan(0)
    expect(screen.text()).toMatch(/○ Write yes\.txt/) // the call's line, still running
    await screen.press('y', /approve: .*no\.txt/)
    screen.type('n')
    await screen.waitFor('Wrote one of them.')
    expect(screen.text()).toMatch(/● Write yes\.txt/)
    expect(screen.text()).toMatch(/✗ Write no\.txt/)
    expect(readFileSync(join(f.work, 'yes.txt'), 'utf8')).toBe('hello\n')
    expect(existsSync(join(f.work, 'no.txt'))).toBe(false)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const decisions = f.log().flatMap((e) => (e.type === 'approval/decided' ? [e.data] : []))
    expect(decisions).toMatchObject([
      { toolCallId: 'c1', decision: 'allowed-once', by: 'answerer' },
      { toolCallId: 'c2', decision: 'rejected', by: 'answerer' },
    ])
  })

  it('"allow similar" (r) keeps the suggested rule in settings.yaml; the next similar call is not asked', async () => {
    // Writes to the workspace's .vscode/ ask first (a protected path).
    const write = (id: string, path: string) =>
      completionResponse({ toolCalls: [call(id, 'write', { path, content: `${path}\n` })] })
    f.server.enqueue(
      write('c1', '.vscode/one.json'),
      write('c2', '.vscode/two.json'),
      completionResponse({ text: 'Wrote both.' }),
    )
    const screen = f.open(['write', 'two', 'files'])
    await screen.waitFor('always allow similar (your settings): Edit(.vscode/**)')
    await screen.press('r', 'Wrote both.')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    for (const name of ['one.json', 'two.json'])
      expect(readFileSync(join(f.work, '.vscode', name), 'utf8')).toBe(`.vscode/${name}\n`)
    expect(readFileSync(join(f.home, 'settings.yaml'), 'utf8')).toContain('Edit(.vscode/**)')
    const decisions = f.log().flatMap((e) => (e.type === 'approval/decided' ? [e.data] : []))
    expect(decisions).toMatchObject([
      { toolCallId: 'c1', decision: 'allowed-once', by: 'answerer', rule: { text: 'Edit(.vscode/**)', scope: 'user' } },
      {
        toolCallId: 'c2',
        decision: 'allowed-once',
        reason: expect.stringContaining('allowed by rule allow Edit(.vscode/**)'),
      },
    ])
  })

  it('at an approval: a typed reason rejects and the model goes on; Esc rejects and stops the turn', async () => {
    const write = (id: string, path: string) =>
      completionResponse({ toolCalls: [call(id, 'write', { path, content: 'x\n' })] })
    f.server.enqueue(write('c1', '.vscode/a.json'), completionResponse({ text: 'Understood, skipped.' }))
    const screen = f.open(['write', 'files'])
    await screen.waitFor('Esc stop the turn')
    expect(screen.text()).toContain('? approve: Write')
    await screen.press('keep my editor config\r', 'Understood, skipped.')
    const rejected = f.log().flatMap((e) => (e.type === 'tool/result' ? [e.data] : []))
    expect(rejected.at(-1)).toMatchObject({ code: 'FS_PROTECTED_PATH' }) // the protected write, refused
    expect(JSON.stringify(rejected.at(-1))).toContain('keep my editor config')
    // The typed reason was an answer, not a message to the model.
    expect(typed(f.log())).toEqual([[{ type: 'text', text: 'write files' }]])

    f.server.enqueue(write('c2', '.vscode/b.json'), completionResponse({ text: 'never sent' }))
    await screen.press('again\r', /approve: .*b\.json/)
    screen.type('\x1b')
    await screen.waitFor(/turn stopped|stopped the turn/)
    await screen.waitFor('›', 5000)
    expect(existsSync(join(f.work, '.vscode', 'b.json'))).toBe(false)
    await expect
      .poll(() =>
        f
          .log()
          .flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []))
          .at(-1),
      )
      .toBe('aborted')
    const decided = f.log().flatMap((e) => (e.type === 'approval/decided' ? [e.data] : []))
    expect(decided.at(-1)).toMatchObject({ decision: 'rejected', reason: 'the person stopped the turn (Esc)' })
    expect(f.server.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(3)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
  })

  it('Ctrl-C while a turn runs stops the turn and keeps what is typed; twice on an empty editor exits', async () => {
    f.server.enqueue(completionResponse({ text: 'slow', delayMs: 30_000 }))
    const screen = f.open(['think', 'slowly'])
    await screen.waitFor('working')
    screen.type('draft')
    await screen.press('\x03', /cancelling the turn/)
    await screen.waitFor(/turn (stopped|interrupted)/)
    expect(screen.text()).toContain('draft')
    await expect.poll(() => f.log().flatMap((e) => (e.type === 'turn/end' ? [e.data.reason] : []))).toEqual(['aborted'])
    // Ctrl-C clears the editor once the turn is over (a press that lands while it is still winding
    // down cancels again instead, so press until the draft is gone), then twice on the empty editor exits.
    await expect
      .poll(
        () => {
          if (screen.text().includes('draft')) screen.type('\x03')
          return screen.text().includes('draft')
        },
        { interval: 250, timeout: 10_000 },
      )
      .toBe(false)
    await screen.press('\x03', 'press Ctrl-C again to exit')
    screen.type('\x03')
    expect(await screen.exited).toBe(0)
  })

  it('a message queued before quitting waits on resume, shown as queued, until Enter sends it', async () => {
    f.server.enqueue(completionResponse({ text: 'slow', delayMs: 30_000 }))
    const screen = f.open(['think', 'slowly'])
    await screen.waitFor('working')
    const requests = () => f.server.requests.filter((r) => r.path.endsWith('/chat/completions')).length
    await expect.poll(requests).toBe(1) // the slow request is in flight
    screen.type('and then this')
    await screen.press('\x1b\r', /queued: and then this/) // Alt+Enter queues for the next turn
    screen.type('\x03') // stops the turn; the queued message stays queued
    await screen.waitFor(/turn (stopped|interrupted)/)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const sessionId = /dsh --resume ([0-9a-f-]{36})/.exec(screen.raw())?.[1] as string
    const before = requests()

    f.server.enqueue(completionResponse({ text: 'Did the queued one.' }))
    const resumed = f.open(['--resume', sessionId])
    await resumed.waitFor(/queued: and then this/)
    await resumed.waitFor('Enter sends the queued messages')
    await new Promise((done) => setTimeout(done, 500))
    expect(requests()).toBe(before) // nothing ran by itself
    await resumed.press('\r', 'Did the queued one.')
    const last = f.server.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)
    expect(JSON.stringify(last?.body)).toContain('and then this')
    resumed.type('\x04')
    expect(await resumed.exited).toBe(0)
  })

  it('makes "allow for this chat" a logged session grant that a resumed chat keeps', async () => {
    const escalate = { sandbox_permissions: 'workspace-write', justification: 'the user asked for it' }
    const write = (id: string, path: string) =>
      completionResponse({ toolCalls: [call(id, 'write', { path, content: `${path}\n`, ...escalate })] })
    f.server.enqueue(write('c1', 'one.txt'), write('c2', 'two.txt'), completionResponse({ text: 'Wrote both.' }))
    const screen = f.open(['--permission-mode', 'read-only', 'write', 'two', 'files'])
    await screen.waitFor('Esc stop the turn')
    await screen.press('a', 'Wrote both.')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const sessionId = /dsh --resume ([0-9a-f-]{36})/.exec(screen.raw())?.[1] as string
    f.server.enqueue(write('c3', 'three.txt'), completionResponse({ text: 'Wrote the third.' }))
    const resumed = f.open(['--resume', sessionId])
    await resumed.waitFor('session ')
    await resumed.press('one more\r', 'Wrote the third.')
    expect(resumed.all()).not.toContain('? approve:')
    resumed.type('\x04')
    expect(await resumed.exited).toBe(0)
    for (const name of ['one.txt', 'two.txt', 'three.txt']) {
      expect(readFileSync(join(f.work, name), 'utf8')).toBe(`${name}\n`)
    }
    const decisions = f.log(sessionId).flatMap((e) => (e.type === 'approval/decided' ? [e.data] : []))
    expect(decisions).toMatchObject([
      { toolCallId: 'c1', decision: 'allowed-once', by: 'answerer', grant: { scope: 'session', toolName: 'write' } },
      { toolCallId: 'c2', decision: 'allowed-once', by: 'grant' },
      { toolCallId: 'c3', decision: 'allowed-once', by: 'grant' },
    ])
  })

  it("shows a subagent's calls nested under the parent's task line, from the child's events", async () => {
    writeFileSync(join(f.work, 'notes.md'), '# notes\n')
    f.server.enqueue(
      completionResponse({ toolCalls: [call('t1', 'task', { prompt: 'read the notes', description: 'reader' })] }),
      completionResponse({
        toolCalls: [call('r1', 'read', { path: 'notes.md' }), call('r2', 'read', { path: 'gone.md' })],
      }),
      completionResponse({ text: 'The notes say notes.' }),
      completionResponse({ text: 'Delegated and done.' }),
    )
    const screen = f.open(['delegate', 'it'])
    await screen.waitFor('Delegated and done.')
    const rows = screen.all().split('\n')
    const task = rows.findIndex((row) => /^● .*reader|^● .*read the notes/.test(row))
    expect(task).toBeGreaterThanOrEqual(0)
    // The child's two calls, indented under the task line: one done, one failed.
    expect(rows[task + 1]).toMatch(/^ {2}● Read notes\.md/)
    expect(rows[task + 2]).toMatch(/^ {2}✗ Read gone\.md/)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const sessionId = /dsh --resume ([0-9a-f-]{36})/.exec(screen.raw())?.[1] as string
    const started = f.log(sessionId).flatMap((e) => (e.type === 'subagent/started' ? [e.data] : []))
    expect(started).toMatchObject([{ callId: 't1' }])
    const child = f.log(started[0]?.childSession as string)
    const calls = child.flatMap((e) => (isEvent(e, 'tool/call') ? [e.data.call.id] : []))
    expect(calls).toEqual(['r1', 'r2'])
  })

  it("draws an ACP child's calls and its answer under the task line, as its progress is logged", async () => {
    writeFileSync(join(f.work, 'notes.md'), '# notes\n')
    const patch = join(f.home, 'acp-agents.yml')
    writeFileSync(
      patch,
      [
        '- id: subagents-acp',
        '  use: "@dsh/orchestration/subagents-acp"',
        '  config:',
        '    agents:',
        '      dsh:',
        '        description: another dsh',
        '        args: ["acp"]',
        '        inheritEnv: true',
        '',
      ].join('\n'),
    )
    // In request order: the parent delegates, the child reads and answers, the parent ends its turn.
    f.server.enqueue(
      completionResponse({
        toolCalls: [call('t1', 'task', { prompt: 'read the notes', provider: 'acp:dsh', description: 'reader' })],
      }),
      completionResponse({ toolCalls: [call('r1', 'read', { path: 'notes.md' })] }),
      completionResponse({ text: 'The notes say notes.' }),
      completionResponse({ text: 'Delegated and done.' }),
    )
    const screen = f.open(['--patch', patch, 'delegate', 'it'])
    await screen.waitFor('Delegated and done.', 60_000)
    const rows = screen.all().split('\n')
    const task = rows.findIndex((row) => /^● .*reader|^● .*read the notes/.test(row))
    expect(task).toBeGreaterThanOrEqual(0)
    expect(rows[task + 1]).toMatch(/^ {2}● .*notes\.md/)
    expect(rows[task + 2]).toMatch(/^ {2}» The notes say notes\./)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)

    // What was drawn is what the parent's log holds.
    const sessionId = /dsh --resume ([0-9a-f-]{36})/.exec(screen.raw())?.[1] as string
    const progress = f.log(sessionId).flatMap((e) => (e.type === 'subagent/progress' ? [e.data] : []))
    expect(progress.flatMap((p) => (p.kind === 'tool' ? [p.status] : []))).toContain('completed')
    expect(progress.flatMap((p) => (p.kind === 'message' ? [p.text] : []))).toEqual(['The notes say notes.'])
  })

  it('steers a running command with Enter, cancels the turn with Esc, and exits on Ctrl-C twice', async () => {
    f.server.enqueue(
      completionResponse({ toolCalls: [call('c1', 'bash', { command: 'sleep 1; echo slept' })] }),
      completionResponse({ text: 'Steered.' }),
      completionResponse({ toolCalls: [call('c2', 'bash', { command: 'sleep 30' })] }),
    )
    const screen = f.open(['please', 'run', 'it'])
    await screen.waitFor('○ ')
    await screen.press('use the other file\r', 'Steered.')
    // The steering message reached the model in the request after the command's result.
    const second = JSON.stringify(f.server.requests[1]?.body.messages)
    expect(second).toContain('use the other file')
    await screen.press('now wait\r', '○ Run command sleep 30')
    screen.type('\x1b')
    await screen.waitFor('turn stopped')
    await screen.press('\x03', 'press Ctrl-C again to exit')
    screen.type('\x03')
    expect(await screen.exited).toBe(0)
    const ended = f.log().filter((e) => isEvent(e, 'turn/end'))
    expect(ended.at(-1)).toMatchObject({ data: { reason: 'aborted' } })
    // The command the turn was running (`sleep 30`) was stopped with it and its result logged.
    const results = f.log().flatMap((e) => (isEvent(e, 'tool/result') ? [e.data.message.toolCallId] : []))
    expect(results).toEqual(['c1', 'c2'])
  })

  it('SIGTERM during a tool body that ignores cancellation: saves the log and exits 143 within the grace', async () => {
    const patch = join(f.home, 'stuck.yml')
    const use = fileURLToPath(new URL('../fixtures/stuck-tool.mjs', import.meta.url))
    writeFileSync(patch, `- id: stuck\n  use: ${JSON.stringify(use)}\n`)
    const marker = join(f.home, 'stuck-started')
    f.server.enqueue(completionResponse({ toolCalls: [call('c1', 'stuck', { marker })] }))
    const screen = f.open(['--patch', patch, 'call', 'stuck'])
    const started = Date.now()
    while (!existsSync(marker)) {
      if (Date.now() - started > 20_000) throw new Error(`the tool never started:\n${screen.text()}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    const signalled = Date.now()
    screen.pty.kill('SIGTERM')
    expect(await screen.exited).toBe(143)
    expect(Date.now() - signalled).toBeLessThan(12_000)
    expect(screen.raw()).toMatch(/did not stop/)
    expect(f.log().flatMap((e) => (isEvent(e, 'tool/call') ? [e.data.call.id] : []))).toEqual(['c1'])
  })

  it('takes a queued message back into the editor with Up, to edit and queue again', async () => {
    f.server.enqueue(
      // Long enough to edit the queue while it runs, even on a loaded machine.
      completionResponse({ toolCalls: [call('c1', 'bash', { command: 'sleep 4' })] }),
      completionResponse({ text: 'Slept.' }),
      completionResponse({ text: 'Followed up.' }),
    )
    const screen = f.open(['start', 'it'])
    await screen.waitFor('○ Run command sleep 4')
    await screen.press('first draft\x1b\r', '↳ queued: first draft')
    await screen.press('\x1b[A', 'editing a queued message')
    await screen.waitFor(/^ +first draft/m) // in the editor, out of the queue
    expect(screen.text()).not.toContain('↳ queued: first draft')
    await screen.press(' fixed\x1b\r', '↳ queued: first draft fixed')
    await screen.waitFor('Followed up.')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const log = f.log()
    expect(typed(log)).toEqual([[{ type: 'text', text: 'start it' }], [{ type: 'text', text: 'first draft fixed' }]])
    const edits = log.flatMap((e) => (e.type === 'agent/inbox/spliced' && e.data.reason === 'edited' ? [e.data] : []))
    expect(edits).toMatchObject([{ target: 'next-turn', deleteCount: 1, items: [] }])
    // The model never saw the first draft.
    expect(JSON.stringify(f.server.requests.map((request) => request.body.messages))).not.toMatch(/first draft"/)
  })

  it('paints the editor before dsh has started and sends what was typed meanwhile', async () => {
    f.server.enqueue(completionResponse({ text: 'Heard you early.' }))
    const screen = f.open([])
    // The early editor, or (a Node that starts dsh before the first paint: 22 and later) the real one.
    // Either way what is typed now is sent once, when dsh is ready; the hint, when the early editor
    // takes the Enter, is only seen when dsh is not ready a moment later, which is a race to leave out.
    await screen.waitFor(/starting dsh…|session [0-9a-f]{8}/)
    screen.type('typed early\r')
    await screen.waitFor('Heard you early.')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    expect(typed(f.log())).toEqual([[{ type: 'text', text: 'typed early' }]])
  })

  it('keys typed one by one across start-up and the hand-over arrive once, in order', async () => {
    // Seen once: `/permissions` typed as the footer appeared arrived as `/pepermissions`.
    f.server.enqueue(completionResponse({ text: 'Heard.' }))
    const screen = f.open([])
    const text = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'
    for (const key of text) {
      screen.type(key)
      await new Promise((resolve) => setTimeout(resolve, 15))
    }
    await screen.waitFor(/session [0-9a-f-]{8}/)
    for (const key of '/status') {
      screen.type(key)
      await new Promise((resolve) => setTimeout(resolve, 8))
    }
    await screen.waitFor(/^ +abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ\/status/m)
    for (let i = 0; i < '/status'.length; i++) screen.type('\x7f')
    await screen.press('\r', 'Heard.')
    await screen.press('/status\r', /› \/status/)
    await screen.waitFor(/^ *preset: code/m)
    expect(screen.text()).not.toMatch(/unknown command/)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    expect(typed(f.log())).toEqual([[{ type: 'text', text }]])
  })

  it('resumes a session by id and by --continue, showing its history', async () => {
    f.server.enqueue(completionResponse({ text: 'The first answer.' }))
    const first = f.open(['first', 'question'])
    await first.waitFor('The first answer.')
    first.type('\x04')
    await first.exited
    const sessionId = /dsh --resume ([0-9a-f-]{36})/.exec(first.raw())?.[1]
    expect(sessionId).toBeDefined()
    f.server.enqueue(completionResponse({ text: 'The second answer.' }))
    const second = f.open(['--resume', sessionId as string])
    await second.waitFor('The first answer.')
    expect(second.text()).toContain('› first question')
    await second.press('and more\r', 'The second answer.')
    second.type('\x04')
    await second.exited
    const third = f.open(['--continue'])
    await third.waitFor('The second answer.')
    expect(third.text()).toContain('› and more')
    third.type('\x04')
    expect(await third.exited).toBe(0)
    expect(typed(f.log(sessionId))).toHaveLength(2)
  })
})
