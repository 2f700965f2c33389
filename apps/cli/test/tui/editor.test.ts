// The chat's editor and terminal edges: / and @ completion, the session picker, resize, NO_COLOR, and
// what plain `dsh` does when it is not attached to a terminal.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isEvent } from '@dsh/session'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDshSync, startDsh } from '../dsh-child.js'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

const sessionIdOf = (raw: string) => /dsh --resume ([0-9a-f-]{36})/.exec(raw)?.[1] as string

describe('the chat editor and terminal', () => {
  it('runs /model and /compact picked from the completion menu', async () => {
    f.server.enqueue(completionResponse({ text: 'First answer.' }))
    const screen = f.open(['start', 'here'])
    await screen.waitFor('First answer.')
    await screen.press('/mod', /→ model .*Show the session's model/)
    screen.type('\t')
    await screen.waitFor('/model ')
    await screen.press('deepseek:deepseek-v4-flash\r', 'model: deepseek:deepseek-v4-flash (from the next request)')
    await screen.waitFor('deepseek:deepseek-v4-flash · preset code · workspace-write')
    f.server.enqueue(completionResponse({ text: 'Second answer.' }))
    await screen.press('go on\r', 'Second answer.')
    expect(f.server.requests.at(-1)?.body.model).toBe('deepseek-v4-flash')
    f.server.enqueue(completionResponse({ text: 'A summary of the talk so far.' }))
    await screen.press('/comp', /→ compact .*Summarise older conversation/)
    screen.type('\t\r')
    await screen.waitFor(/compacted \d+ earlier messages into a summary/)
    expect(screen.text()).not.toMatch(/surface \d|\(event \d/)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    expect(f.log().some((e) => e.type === 'compaction/end')).toBe(true)
  })

  it('opens a chat with --preset: the footer names it, the log records it, the model gets only its tools', async () => {
    f.server.enqueue(completionResponse({ text: 'A plan.' }))
    const screen = f.open(['--preset', 'plan', 'plan', 'it'])
    await screen.waitFor('A plan.')
    await screen.waitFor(/preset plan · read-only/)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const log = f.log()
    expect(log.flatMap((e) => (e.type === 'preset/selected' ? [e.data] : []))).toEqual([
      { name: 'plan', by: 'request', origin: 'shipped' },
    ])
    const tools = (f.server.requests[0]?.body.tools ?? []) as Array<{ function: { name: string } }>
    const offered = tools.map((tool) => tool.function.name)
    expect(offered).toContain('read')
    for (const mutating of ['write', 'edit', 'bash']) expect(offered).not.toContain(mutating)
    // A preset the directory does not know is refused with the fix, before any request.
    const unknown = f.open(['--preset', 'nope'])
    expect(await unknown.exited).not.toBe(0)
    expect(unknown.raw()).toContain('dsh: no preset "nope"; available: ask, code, minimal, plan')
    expect(f.server.requests).toHaveLength(1)
  })

  it('completes @ file paths from the workspace into the message', async () => {
    writeFileSync(join(f.work, 'notes-file.md'), '# notes\nsecond line of the file\n')
    f.server.enqueue(completionResponse({ text: 'Read it.' }))
    const screen = f.open([])
    await screen.waitFor('session ')
    await screen.press('look at @notes', /→ notes-file\.md/)
    screen.type('\t')
    await screen.waitFor('look at @notes-file.md')
    await screen.press('\r', 'Read it.')
    // The model got the file's block; the transcript shows a chip in its place, not the raw block.
    expect(screen.text()).toMatch(/\+ notes-file\.md \(32 B, version \S+\) · Ctrl-O to view/)
    expect(screen.text()).not.toContain('<context')
    expect(screen.text()).not.toContain('second line of the file')
    // Ctrl-O shows what was attached under the chip (one keypress away), and hides it again.
    await screen.press('\x0f', /^ {4}second line of the file/m)
    await screen.press('\x0f', /Ctrl-O to view/)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const said = f.log().flatMap((e) => (isEvent(e, 'user/message') && !e.data.origin ? [e.data.message.content] : []))
    expect(JSON.stringify(said)).toContain('@notes-file.md')
    expect(JSON.stringify(said)).toContain('<context path=')
  })

  it('searches the input history with Ctrl-R, including what was typed before a resume', async () => {
    f.server.enqueue(completionResponse({ text: 'Answer one.' }), completionResponse({ text: 'Answer two.' }))
    const first = f.open(['fix the parser bug'])
    await first.waitFor('Answer one.')
    await first.press('write the parser docs\r', 'Answer two.')
    first.type('\x04')
    await first.exited
    const sessionId = sessionIdOf(first.raw())
    f.server.enqueue(completionResponse({ text: 'Answer three.' }))
    const screen = f.open(['--resume', sessionId])
    await screen.waitFor('Answer two.')
    await screen.press('\x12', 'search history: ""')
    await screen.press('parser', 'search history: "parser"')
    await screen.waitFor(/^ +write the parser docs/m) // the newest match, in the editor
    await screen.press('\x12', /^ +fix the parser bug/m) // Ctrl-R again: the older one
    await screen.press('\r', 'Answer three.')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const typed = f
      .log(sessionId)
      .flatMap((e) => (isEvent(e, 'user/message') && !e.data.origin ? [e.data.message.content] : []))
    expect(typed.map((content) => JSON.stringify(content))).toEqual(
      ['fix the parser bug', 'write the parser docs', 'fix the parser bug'].map((text) =>
        JSON.stringify([{ type: 'text', text }]),
      ),
    )
    expect(f.server.requests).toHaveLength(3)
  })

  it('attaches a pasted image path to the next message instead of typing it', async () => {
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAADElEQVQImWNgMD4DAAE2AQDyHVEtAAAAAElFTkSuQmCC',
      'base64',
    )
    writeFileSync(join(f.work, 'my shot.png'), png)
    f.server.enqueue(completionResponse({ text: 'A one-pixel image.' }))
    const screen = f.open([])
    await screen.waitFor('session ')
    // A pasted name of no image file stays text in the editor.
    await screen.press('\x1b[200~missing.png\x1b[201~', /^ +missing\.png/m)
    screen.type('\x03')
    // A terminal's bracketed paste of a dropped file: quoted, absolute.
    await screen.press(
      `\x1b[200~'${join(f.work, 'my shot.png')}'\x1b[201~`,
      '+ my shot.png (attached to the next message)',
    )
    expect(screen.text()).not.toContain(`'${join(f.work, 'my shot.png')}'`) // not typed into the editor
    await screen.press('what is this?\r', 'A one-pixel image.')
    expect(screen.text()).not.toContain('attached to the next message')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const said = f.log().flatMap((e) => (isEvent(e, 'user/message') && !e.data.origin ? [e.data.message.content] : []))
    expect(said).toHaveLength(1)
    expect(said[0]?.map((block) => block.type)).toContain('image')
    expect(JSON.stringify(said[0])).toMatch(/attached image my shot\.png: image\/png, 1x1/)
  })

  it('lets `--resume` without an id pick one of the sessions of this directory', async () => {
    f.server.enqueue(completionResponse({ text: 'Answer one.' }), completionResponse({ text: 'Answer two.' }))
    const ids: string[] = []
    for (const prompt of ['older task', 'newer task']) {
      const screen = f.open([prompt])
      await screen.waitFor(/Answer (one|two)\./)
      screen.type('\x04')
      await screen.exited
      ids.push(sessionIdOf(screen.raw()))
    }
    const picker = f.open(['--resume'])
    await picker.waitFor('Resume a session of this directory')
    await picker.waitFor('older task')
    expect(picker.text()).toContain('just now · 2 messages ·') // not "0m ago · 9 events"
    picker.type('\x1b[B') // Down: the older session (newest is first)
    await picker.press('\r', 'Answer one.')
    await picker.waitFor(`session ${ids[0]}`)
    expect(picker.text()).not.toContain('Resume a session')
    expect(picker.text()).toContain(`resuming ${ids[0]}`)
    picker.type('\x04')
    expect(await picker.exited).toBe(0)
  })

  it('re-wraps to 40 columns on resize without leftovers of the wider layout', async () => {
    const long = Array.from({ length: 12 }, (_, i) => `word${i}`).join(' ')
    f.server.enqueue(completionResponse({ text: `${long} end-of-paragraph` }))
    const screen = f.open(['wrap', 'this'], { cols: 100, rows: 20 })
    await screen.waitFor('end-of-paragraph')
    screen.resize(40, 20)
    await new Promise((done) => setTimeout(done, 300))
    await screen.waitFor('end-of-paragraph')
    const rows = screen.text().split('\n')
    // One editor box (two rules the width of the terminal) and one footer: nothing left from the 100-column frame.
    expect(rows.filter((row) => /^─+$/.test(row))).toEqual(['─'.repeat(40), '─'.repeat(40)])
    expect(rows.filter((row) => row.includes('workspace-write'))).toHaveLength(1)
    expect(rows.join(' ')).toContain('word0 word1')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
  })

  it('writes no colour with NO_COLOR, and colour without it', async () => {
    const colour = new RegExp(`${String.fromCharCode(27)}\\[(?:3[0-7]|9[0-7]|38;)`)
    f.server.enqueue(
      completionResponse({ text: 'Plain **words**.' }),
      completionResponse({ text: 'Bright **words**.' }),
    )
    const plain = f.open(['first', 'one'], { env: { NO_COLOR: '1' } })
    await plain.waitFor('Plain words.')
    plain.type('\x04')
    await plain.exited
    expect(plain.raw()).not.toMatch(colour)
    const coloured = f.open(['second', 'one'])
    await coloured.waitFor('Bright words.')
    coloured.type('\x04')
    await coloured.exited
    expect(coloured.raw()).toMatch(colour)
  })

  it('colours code blocks by language, with a highlighter that `dsh --help` never loads', async () => {
    // A module hook that names every emphasize file Node loads.
    const hook = join(f.home, 'hook.mjs')
    const load = `export async function load(url, context, next) { if (url.includes('/emphasize/')) console.error('LOADED ' + url); return next(url, context) }`
    writeFileSync(
      hook,
      `import { register } from 'node:module'\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(load)}))\n`,
    )
    const help = runDshSync(['--help'], { home: f.home, nodeArgs: ['--import', hook] })
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('Usage: dsh')
    expect(help.stderr).not.toContain('LOADED')
    f.server.enqueue(
      completionResponse({ text: 'Hi.' }),
      completionResponse({ text: 'Here:\n\n```ts\nconst answer: number = 42 // the answer\n```\n' }),
    )
    const screen = f.open(['say', 'hello'])
    await screen.waitFor('Hi.')
    await screen.press('show code\r', 'the answer')
    const esc = String.fromCharCode(27)
    // `const` as a keyword (magenta), 42 as a number (yellow), the comment grey: not one colour for the block.
    expect(screen.raw()).toContain(`${esc}[35mconst${esc}[39m`)
    expect(screen.raw()).toContain(`${esc}[33m42${esc}[39m`)
    expect(screen.raw()).toContain(`${esc}[90m// the answer${esc}[39m`)
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
  })

  it('runs the prompt as `dsh run` does, with a hint, when stdin is not a terminal', async () => {
    f.server.enqueue(completionResponse({ text: 'Headless answer.' }))
    const child = startDsh(['say', 'it'], { home: f.home, cwd: f.work, modelUrl: f.server.url })
    child.proc.stdin.end()
    const { code, stdout, stderr } = await child.exited
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'Headless answer.\n' })
    expect(stderr).toContain('not a terminal, so no chat')
  })
})
