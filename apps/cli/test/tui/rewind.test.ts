// Rewind in the terminal chat (issue 32), in a real pseudo-terminal against the mock model: turn 1
// writes a file with the write tool, turn 2 changes the workspace with bash (sed -i, rm, mv, a new
// binary file). Esc twice opens the picker; "files only" puts the workspace back byte for byte (the
// test's own copy); /redo gives turn 2 back; a concurrent edit is listed and, answered no, kept; and
// "conversation only" switches to a new session whose next request has none of turn 2.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, fileTree } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

it('Esc Esc opens the rewind picker; files only, /redo, a refused overwrite, then conversation only', async () => {
  writeFileSync(join(f.work, 'config.ini'), 'mode=alpha\n')
  writeFileSync(join(f.work, 'keep.txt'), 'keep\n')
  writeFileSync(join(f.work, 'move.txt'), 'move\n')
  f.server.enqueue(
    call('w1', 'write', { path: 'notes.txt', content: 'one\n' }),
    completionResponse({ text: 'Done one.' }),
  )
  const screen = f.open(['make', 'notes'], { cols: 140 })
  await screen.waitFor('Done one.')
  const afterOne = mkdtempSync(join(tmpdir(), 'dsh-tui-rewind-'))
  cpSync(f.work, afterOne, { recursive: true })
  f.server.enqueue(
    call('b1', 'bash', {
      command:
        "sed -i 's/alpha/beta/' config.ini && rm keep.txt && mv move.txt moved.txt && printf '\\000\\377' > data.bin",
    }),
    completionResponse({ text: 'Done two.' }),
  )
  await screen.press('change things\r', 'Done two.')
  const afterTwo = fileTree(f.work)
  // The turn has ended (its closing checkpoint too) before the chat is idle again.
  await expect.poll(() => f.log().filter((event) => event.type === 'turn/end').length).toBe(2)
  // Esc, a moment, Esc: two presses as a person makes them.
  const escTwice = async () => {
    screen.type('\x1b')
    await new Promise((resolve) => setTimeout(resolve, 120))
    await screen.press('\x1b', 'Rewind to before which message?')
  }

  // Esc twice on the empty editor: pick message 2 (the newest is first), then "Files only".
  await escTwice()
  await screen.press('\r', 'What goes back to before message 2?')
  screen.type('\x1b[B')
  screen.type('\x1b[B')
  await screen.press('\r', /took back \d+ file changes/)
  expect(fileTree(f.work)).toEqual(fileTree(afterOne))

  await screen.press('/redo\r', /gave back \d+ file changes/)
  await new Promise((resolve) => setTimeout(resolve, 100))
  expect(fileTree(f.work)).toEqual(afterTwo)

  // The person edits a file turn 2 changed: the rewind lists it and, answered no, changes nothing.
  writeFileSync(join(f.work, 'config.ini'), 'mode=mine\n')
  await screen.press('/rewind 2 files\r', 'Overwrite them too?')
  expect(screen.text()).toContain('config.ini')
  await screen.press('\r', 'nothing was changed')
  expect(readFileSync(join(f.work, 'config.ini'), 'utf8')).toBe('mode=mine\n')
  expect(fileTree(f.work)['data.bin']).toBe(afterTwo['data.bin'])

  // Conversation only: a new session before message 2, the message back in the editor.
  await escTwice()
  await screen.press('\r', 'What goes back to before message 2?')
  screen.type('\x1b[B')
  await screen.press('\r', /rewound: this is session [0-9a-f-]{36}/)
  const before = f.server.requests.length
  f.server.enqueue(completionResponse({ text: 'Fresh answer.' }))
  screen.type(', differently')
  await screen.press('\r', 'Fresh answer.')
  const body = JSON.stringify(f.server.requests[before]?.body)
  expect(body).toContain('change things, differently')
  expect(body).toContain('make notes')
  expect(body).not.toContain('Done two.')
  expect(readFileSync(join(f.work, 'config.ini'), 'utf8')).toBe('mode=mine\n')
  screen.type('\x04')
  expect(await screen.exited).toBe(0)
  rmSync(afterOne, { recursive: true })
})

it('/rewind while a turn runs says to stop the turn first, and the turn goes on', async () => {
  f.server.enqueue(completionResponse({ text: 'Slow answer.', delayMs: 1500 }))
  const screen = f.open(['think', 'slowly'], { cols: 140 })
  await screen.waitFor('working')
  await screen.press('/rewind\r', 'a turn is running; stop it first (Esc), then rewind')
  expect(screen.text()).not.toContain('Rewind to before which message?')
  await screen.waitFor('Slow answer.')
  await expect
    .poll(() => f.log().flatMap((event) => (event.type === 'turn/end' ? [event.data.reason] : [])), {
      timeout: 10_000,
    })
    .toEqual(['completed'])
  // The command was the chat's, not a message for the model.
  expect(JSON.stringify(f.server.requests.map((request) => request.body))).not.toContain('/rewind')
})
