// `dsh --worktree` in a real pseudo-terminal (issue 38): the chat works in a new worktree on branch
// dsh/<name>; when the chat ends, the branch's changes are shown and the person chooses: `m` merges them
// into the repository (checked in git and on disk), `d` discards the worktree and its branch.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
const git = (...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], {
    cwd: f.work,
    encoding: 'utf8',
  }).trim()

beforeEach(async () => {
  f = await fixture()
  git('init', '-q', '-b', 'main')
  writeFileSync(join(f.work, 'README.md'), 'start\n')
  git('add', '.')
  git('commit', '-q', '-m', 'start')
})
afterEach(async () => {
  await f.close()
})

const write = (path: string, content: string) =>
  completionResponse({ toolCalls: [{ id: `w-${path}`, name: 'write', arguments: JSON.stringify({ path, content }) }] })

it('works in a worktree and merges its branch when the person answers m', async () => {
  f.server.enqueue(write('feature.txt', 'from the chat\n'), completionResponse({ text: 'Wrote feature.txt.' }))
  const screen = f.open(['--worktree=chatwt', 'add', 'a', 'feature'])
  await screen.waitFor('Wrote feature.txt.')
  // The chat's edit is in its worktree, not in the repository.
  const worktree = join(`${f.work}.worktrees`, 'chatwt')
  expect(readFileSync(join(worktree, 'feature.txt'), 'utf8')).toBe('from the chat\n')
  expect(existsSync(join(f.work, 'feature.txt'))).toBe(false)
  screen.type('\x04')
  await screen.waitFor('branch dsh/chatwt changes 1 file')
  await screen.waitFor('[m/k/d]')
  screen.type('m\r')
  await screen.waitFor('merged dsh/chatwt into main (fast-forward)')
  expect(await screen.exited).toBe(0)
  expect(readFileSync(join(f.work, 'feature.txt'), 'utf8')).toBe('from the chat\n')
  expect(existsSync(worktree)).toBe(false)
  expect(git('branch', '--list', 'dsh/*')).toBe('')
})

it('discards the worktree and its branch when the person answers d', async () => {
  f.server.enqueue(write('scratch.txt', 'throwaway\n'), completionResponse({ text: 'Done.' }))
  const screen = f.open(['--worktree=scratch', 'try', 'something'])
  await screen.waitFor('Done.')
  screen.type('\x04')
  await screen.waitFor('[m/k/d]')
  screen.type('d\r')
  await screen.waitFor('discarded dsh/scratch')
  expect(await screen.exited).toBe(0)
  expect(existsSync(join(`${f.work}.worktrees`, 'scratch'))).toBe(false)
  expect(existsSync(join(f.work, 'scratch.txt'))).toBe(false)
  expect(git('branch', '--list', 'dsh/*')).toBe('')
})
