// The commands people type by habit, on the terminal chat (issue 31): /help, /status, /mcp, /diff,
// /init, /new (/clear) and /exit (/quit), read off the screen, the session logs and the files on disk.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type AnySessionEvent, isEvent } from '@dsh/session'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

const typed = (events: AnySessionEvent[]) =>
  events.flatMap((e) =>
    isEvent(e, 'user/message') && !e.data.origin
      ? [e.data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')]
      : [],
  )
const sessionFiles = () => readdirSync(join(f.home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
const write = (id: string, path: string, content: string) =>
  completionResponse({ toolCalls: [{ id, name: 'write', arguments: JSON.stringify({ path, content }) }] })

describe('habitual commands in the terminal chat', () => {
  it('/help lists them, /status and /mcp describe the session and its MCP servers', async () => {
    const patch = join(f.home, 'mcp.yml')
    writeFileSync(
      patch,
      '- id: mcp\n  use: "@dsh/bridges/mcp/manager"\n  config:\n    mcpJson: false\n    restart: { maxRestarts: 0 }\n    servers:\n      broken: { command: dsh-no-such-mcp-server }\n',
    )
    const screen = f.open(['--patch', patch])
    await screen.waitFor(/preset code/)
    await screen.press('/help\r', '/status')
    for (const name of ['/exit', '/quit', '/clear', '/new', '/mcp', '/diff', '/init', '/model', '/help'])
      expect(screen.all()).toContain(name)
    await screen.press('/status\r', 'workspace: ')
    const id = /session: ([0-9a-f-]{36})/.exec(screen.all())?.[1]
    expect(id).toBeDefined()
    expect(screen.all()).toContain(`workspace: ${f.work}`)
    expect(screen.all()).toMatch(/model: deepseek:deepseek-/)
    expect(screen.all()).toMatch(/preset: code/)
    expect(screen.all()).toMatch(/mode: workspace-write/)
    expect(screen.all()).toMatch(/context: [\d,]+ (of [\d,]+ )?tokens/)
    expect(screen.all()).toMatch(/MCP servers \(1\):\s+broken: /)
    await screen.press('/mcp\r', /broken: failed, 0 tools \(error: /)
    screen.type('/quit\r')
    expect(await screen.exited).toBe(0)
    expect(screen.raw()).toContain(`session ${id} saved`)
    expect(f.server.requests).toHaveLength(0)
  })

  it('/init asks the model for AGENTS.md through a normal turn; /diff shows the session writes, or git diff', async () => {
    f.server.enqueue(write('c1', 'AGENTS.md', '# Agents\n\nRun npm test.\n'), completionResponse({ text: 'Wrote it.' }))
    const screen = f.open()
    await screen.waitFor(/preset code/)
    await screen.press('/init\r', 'Wrote it.')
    expect(readFileSync(join(f.work, 'AGENTS.md'), 'utf8')).toBe('# Agents\n\nRun npm test.\n')
    expect(JSON.stringify(f.server.requests[0]?.body.messages)).toContain('Write an AGENTS.md file')
    await screen.press('/diff\r', "the session's logged writes and edits")
    await screen.waitFor('+++ b/AGENTS.md')
    expect(screen.all()).toContain('+Run npm test.')
    // In a git work tree, /diff is git's view of every uncommitted change.
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: f.work })
    git('init', '-q')
    git('add', 'AGENTS.md')
    git('commit', '-qm', 'agents')
    writeFileSync(join(f.work, 'AGENTS.md'), '# Agents\n\nRun npm run check.\n')
    await screen.press('/diff\r', 'git diff HEAD of')
    await screen.waitFor('+Run npm run check.')
    expect(screen.all()).toContain('-Run npm test.')
    screen.type('/exit\r')
    expect(await screen.exited).toBe(0)
    expect(typed(f.log())).toHaveLength(1)
  })

  it('/new starts a fresh session in the same chat; the old one keeps its history and stays resumable', async () => {
    f.server.enqueue(completionResponse({ text: 'First answer.' }), completionResponse({ text: 'Second answer.' }))
    const screen = f.open(['first', 'question'])
    await screen.waitFor('First answer.')
    await screen.press('/new\r', /new session [0-9a-f-]{36}; the previous one stays/)
    const afterNew = screen.all().replace(/\s+/g, '')
    await screen.press('second question\r', 'Second answer.')
    expect(JSON.stringify(f.server.requests[1]?.body.messages)).not.toContain('first question')
    const fresh = /newsession([0-9a-f-]{36});/.exec(afterNew)?.[1] as string
    screen.type('/clear\r')
    // The note wraps at the terminal's width: read it with the whitespace taken out.
    for (let tries = 0; !screen.all().replace(/\s+/g, '').includes(`dsh--resume${fresh}`); tries++) {
      if (tries > 400) throw new Error(`no /clear note; the screen shows:\n${screen.text()}`)
      await new Promise((done) => setTimeout(done, 25))
    }
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const logs = sessionFiles().map((name) => ({
      id: name.replace('.jsonl', ''),
      typed: typed(f.log(name.replace('.jsonl', ''))),
    }))
    expect(logs.map((log) => log.typed).sort()).toEqual([[], ['first question'], ['second question']])
    const old = logs.find((log) => log.typed[0] === 'first question')?.id
    expect(logs.find((log) => log.typed[0] === 'second question')?.id).toBe(fresh)
    expect(afterNew).toContain(`newsession${fresh};thepreviousonestaysresumable:dsh--resume${old}`)
  })
})
