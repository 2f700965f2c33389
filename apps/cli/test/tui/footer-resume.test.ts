// The terminal chat in a real pseudo-terminal: the footer names the workspace's git branch and marks
// uncommitted changes, refreshed after each turn (the mock model writes a file through the write
// tool); `dsh --resume` takes a unique prefix of a session id.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

const git = (...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: f.work, stdio: 'ignore' })

it('shows the branch, then a dirty mark once a turn changed the worktree', async () => {
  git('init', '-q', '-b', 'feature-x')
  writeFileSync(join(f.work, 'a.txt'), 'a\n')
  git('add', '.')
  git('commit', '-q', '-m', 'init')
  f.server.enqueue(
    completionResponse({
      toolCalls: [{ id: 'c1', name: 'write', arguments: JSON.stringify({ path: 'b.txt', content: 'b\n' }) }],
    }),
    completionResponse({ text: 'Wrote b.txt.' }),
  )
  const screen = f.open([], { cols: 160 }) // the footer on one line
  await screen.waitFor(/git feature-x · session/)
  expect(screen.text()).not.toContain('git feature-x*')
  await screen.press('write b\r', 'Wrote b.txt.')
  await screen.waitFor(/git feature-x\* · session/)
  screen.type('\x04')
  expect(await screen.exited).toBe(0)
})

it('shows no git part outside a repository', async () => {
  const screen = f.open()
  await screen.waitFor(/preset code/)
  expect(screen.text()).not.toMatch(/ · git /)
  screen.type('\x04')
  expect(await screen.exited).toBe(0)
})

it('dsh --resume takes a unique prefix of the session id', async () => {
  f.server.enqueue(completionResponse({ text: 'First answer.' }))
  const first = f.open(['say', 'hello'])
  await first.waitFor('First answer.')
  first.type('\x04')
  expect(await first.exited).toBe(0)
  const id = /dsh --resume ([0-9a-f-]{36})/.exec(first.raw())?.[1] as string
  const again = f.open(['--resume', id.slice(0, 8)])
  await again.waitFor('First answer.')
  await again.waitFor(`session ${id}`)
  again.type('\x04')
  expect(await again.exited).toBe(0)
})

it("shows the session's cost beside the context share; a model without a price shows unknown, never $0", async () => {
  f.server.enqueue(
    completionResponse({ text: 'Priced?', usage: { prompt_tokens: 900, completion_tokens: 20, total_tokens: 920 } }),
  )
  const screen = f.open([], { cols: 200 })
  await screen.waitFor(/preset code/)
  await screen.press('hello\r', 'Priced?')
  await screen.waitFor(/tokens \(\d+%\) · unknown · /)
  expect(screen.text()).not.toMatch(/ · \$0/)
  screen.type('\x04')
  expect(await screen.exited).toBe(0)
})
