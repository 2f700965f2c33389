// `dsh attach` in a real pseudo-terminal (issue 38): a background run (no --yes) waits on an approval;
// the attached terminal shows the conversation so far and the live stream, asks the approval, and the
// `y` typed there lets the command run (its file is on disk) and the run finish. The sandboxed model
// cannot reach the attach socket to answer its own approval: $DSH_HOME/run is hidden from its commands.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isEvent } from '@dsh/session'
import { completionResponse, type MockResponse } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { runDsh } from '../dsh-child.js'
import { type Fixture, fixture, ownBells } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

let release!: () => void
const gate = new Promise<void>((done) => {
  release = done
})

function held(response: MockResponse): MockResponse {
  if (response.type !== 'sse') throw new Error('only SSE responses wait')
  return { ...response, steps: [{ until: gate }, ...response.steps] }
}

const bash = (id: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name: 'bash', arguments: JSON.stringify(args) }] })

it('shows the live stream of a background run and answers its approval', async () => {
  const run = join(f.home, 'run')
  // The model's own (sandboxed) try at the control socket, then an escalation that needs the user.
  const probe = `ls -A ${run} 2>&1; for s in ${run}/*.sock; do node -e "require('net').connect(process.argv[1]).on('connect',()=>{console.log('CONNECTED');process.exit()}).on('error',e=>console.log('refused',e.code))" "$s"; done; echo probe-done`
  f.server.enqueue(
    bash('probe', { command: probe }),
    bash('esc', {
      command: 'echo approved > approved.txt',
      sandbox_permissions: 'danger-full-access',
      justification: 'the test needs a real approval',
    }),
    held(completionResponse({ text: ['finished ', 'after ', 'the approval'], delayMs: 100 })),
  )
  // The user's notification command hears the waiting approval and the end of the turn.
  const notes = join(f.home, 'notes.jsonl')
  writeFileSync(join(f.home, 'settings.yaml'), `notify.command: cat >> ${notes}\nnotify.minTurnSeconds: 0\n`)
  const started = await runDsh(['run', '--bg', 'do the approved thing'], {
    home: f.home,
    cwd: f.work,
    modelUrl: f.server.url,
  })
  expect(started.code, started.stderr).toBe(0)
  const id = started.stdout.trim()
  await f.server.waitForRequests(2, 20_000)
  expect(existsSync(join(run, `${id}.sock`))).toBe(true)
  // The approval still waits after a moment: the notification command hears of it.
  for (let i = 0; i < 100 && !(existsSync(notes) && readFileSync(notes, 'utf8').includes('approval')); i++)
    await new Promise((done) => setTimeout(done, 50))

  const screen = f.open(['attach', id.slice(0, 8)])
  await screen.waitFor('do the approved thing')
  await screen.waitFor(/approval needed: bash/)
  // A bell of its own, not the terminator of an OSC sequence (a title, a hyperlink).
  expect(ownBells(screen.raw())).toBeGreaterThan(0)
  await screen.press('y\r', 'approval allowed-once')
  release()
  await screen.waitFor('finished after the approval', 20_000)
  await screen.waitFor('is no longer served', 20_000)
  expect(await screen.exited).toBe(0)

  expect(readFileSync(join(f.work, 'approved.txt'), 'utf8')).toBe('approved\n')
  // The command runs on its own: its second line may land a moment after the run ended.
  const read = () =>
    readFileSync(notes, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
  for (let i = 0; i < 100 && read().length < 2; i++) await new Promise((done) => setTimeout(done, 50))
  const heard = read()
  expect(heard.map((note) => note.kind)).toEqual(['approval', 'done'])
  expect(heard[0]).toMatchObject({ sessionId: id, cwd: f.work, summary: expect.stringContaining('bash') })
  const record = JSON.parse(readFileSync(join(f.home, 'background', `${id}.json`), 'utf8'))
  expect(record.reason).toBe('completed')
  const events = f.log(id)
  const decided = events.filter((event) => event.type === 'approval/decided')
  expect(decided).toHaveLength(1)
  expect(decided[0]?.data).toMatchObject({ decision: 'allowed-once' })
  // The sandboxed probe saw no socket and connected to nothing.
  const probeResult = events.find((event) => isEvent(event, 'tool/result') && event.data.message.toolCallId === 'probe')
  const output = JSON.stringify(probeResult?.data)
  expect(output).toContain('probe-done')
  expect(output).not.toContain('CONNECTED')
  expect(output).not.toContain('.sock')
}, 90_000)
