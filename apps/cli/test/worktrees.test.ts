// Worktree isolation as `dsh` users get it (issue 38): two `dsh run --worktree` sessions edit the same
// file at the same time and neither sees the other's edit; the user merges one, and the second merge
// conflicts, is undone and named; a killed session leaves a worktree `dsh worktrees` lists and prunes;
// a folder that is not a repository is refused with the reason. Everything is checked in git and on disk.
import { execFileSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, type MockResponse, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDsh, runDshSync, startDsh } from './dsh-child.js'

let home: string
let root: string
let repo: string
const servers: MockLlmServer[] = []

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], {
    cwd,
    encoding: 'utf8',
  }).trim()

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-wt-home-'))
  root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-wt-')))
  repo = join(root, 'app')
  mkdirSync(repo)
  git(repo, 'init', '-q', '-b', 'main')
  writeFileSync(join(repo, 'shared.txt'), 'original\n')
  git(repo, 'add', '.')
  git(repo, 'commit', '-q', '-m', 'start')
})
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(root, { recursive: true, force: true })
})

async function server(...responses: MockResponse[]): Promise<MockLlmServer> {
  const started = await startMockLlmServer({ responses })
  servers.push(started)
  return started
}

const call = (id: string, name: string, args: Record<string, unknown>) =>
  completionResponse({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })

/** A response held back until `gate` resolves. */
function after(gate: Promise<unknown>, response: MockResponse): MockResponse {
  if (response.type !== 'sse') throw new Error('only SSE responses can wait')
  return { ...response, steps: [{ until: gate }, ...response.steps] }
}

function worktreeList(cwd = repo) {
  const listed = runDshSync(['worktrees', '--json'], { home, cwd })
  expect(listed.code, listed.stderr).toBe(0)
  return JSON.parse(listed.stdout) as Array<{
    name: string
    state: string
    branch: string
    path: string
    ahead: number
    dirty: boolean
  }>
}

/** The text of every `tool` result in every durable session under `home`. */
function toolResults(tool: string): string[] {
  const dir = join(home, 'sessions')
  return readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .flatMap((file) =>
      readFileSync(join(dir, file), 'utf8')
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => JSON.parse(line)),
    )
    .flatMap((event) => {
      if (event.type !== 'tool/result' || event.data.message.toolName !== tool) return []
      return [(event.data.message.content as Array<{ text?: string }>).map((block) => block.text ?? '').join('')]
    })
}

describe('dsh run --worktree', () => {
  it('two sessions edit one file in parallel, neither sees the other, the second merge conflicts and is undone', async () => {
    let releaseA!: () => void
    const aMayRead = new Promise<void>((done) => {
      releaseA = done
    })
    // A writes, then waits to read the file until B has written its own version and finished.
    const a = await server(
      call('a0', 'read', { path: 'shared.txt' }),
      call('a1', 'write', { path: 'shared.txt', content: 'from A\n' }),
      after(aMayRead, call('a2', 'read', { path: 'shared.txt' })),
      completionResponse({ text: 'A done' }),
    )
    const b = await server(
      call('b0', 'read', { path: 'shared.txt' }),
      call('b1', 'write', { path: 'shared.txt', content: 'from B\n' }),
      call('b2', 'read', { path: 'shared.txt' }),
      completionResponse({ text: 'B done' }),
    )
    const runA = startDsh(['run', '--yes', '--worktree=alpha', 'edit it'], { home, cwd: repo, modelUrl: a.url })
    await a.waitForRequests(3, 20_000)
    const runB = await runDsh(['run', '--yes', '--worktree=beta', 'edit it'], { home, cwd: repo, modelUrl: b.url })
    expect(runB.code, runB.stderr).toBe(0)
    releaseA()
    const doneA = await runA.exited
    expect(doneA.code, doneA.stderr).toBe(0)

    // Each session read its own edit; the repository has neither.
    const wtRoot = join(root, 'app.worktrees')
    expect(readFileSync(join(wtRoot, 'alpha', 'shared.txt'), 'utf8')).toBe('from A\n')
    expect(readFileSync(join(wtRoot, 'beta', 'shared.txt'), 'utf8')).toBe('from B\n')
    expect(readFileSync(join(repo, 'shared.txt'), 'utf8')).toBe('original\n')
    expect(doneA.stderr).toContain('branch dsh/alpha changes 1 file')
    expect(git(repo, 'show', 'dsh/alpha:shared.txt')).toBe('from A')
    expect(git(repo, 'show', 'dsh/beta:shared.txt')).toBe('from B')
    // Each read the original first, then its own edit only (A after B had written and finished).
    const reads = toolResults('read').filter((text) => !text.includes('original'))
    expect(reads).toHaveLength(2)
    expect(reads.some((text) => text.includes('from A'))).toBe(true)
    expect(reads.some((text) => text.includes('from B'))).toBe(true)
    expect(reads.every((text) => !(text.includes('from A') && text.includes('from B')))).toBe(true)

    const listed = worktreeList()
    expect(listed.map((w) => [w.name, w.state, w.ahead]).sort()).toEqual([
      ['alpha', 'kept', 1],
      ['beta', 'kept', 1],
    ])

    const first = await runDsh(['worktrees', 'merge', 'alpha'], { home, cwd: repo })
    expect(first.code, first.stderr).toBe(0)
    expect(readFileSync(join(repo, 'shared.txt'), 'utf8')).toBe('from A\n')
    expect(existsSync(join(wtRoot, 'alpha'))).toBe(false)

    const head = git(repo, 'rev-parse', 'HEAD')
    const second = await runDsh(['worktrees', 'merge', 'beta'], { home, cwd: repo })
    expect(second.code).not.toBe(0)
    expect(second.stderr).toContain('conflicts in shared.txt; the merge was undone')
    // Nothing half-merged: same HEAD, no merge in progress, a clean tree, the branch and worktree still there.
    expect(git(repo, 'rev-parse', 'HEAD')).toBe(head)
    expect(git(repo, 'status', '--porcelain')).toBe('')
    expect(existsSync(join(repo, '.git', 'MERGE_HEAD'))).toBe(false)
    expect(readFileSync(join(repo, 'shared.txt'), 'utf8')).toBe('from A\n')
    expect(worktreeList().map((w) => w.name)).toEqual(['beta'])

    const discarded = await runDsh(['worktrees', 'discard', 'beta'], { home, cwd: repo })
    expect(discarded.code, discarded.stderr).toBe(0)
    expect(existsSync(join(wtRoot, 'beta'))).toBe(false)
    expect(git(repo, 'branch', '--list', 'dsh/*')).toBe('')
  }, 60_000)

  it('--worktree-end merge fast-forwards; uncommitted changes are named and stay out unless carried', async () => {
    writeFileSync(join(repo, 'shared.txt'), 'local edit\n')
    const model = await server(
      call('w1', 'write', { path: 'new.txt', content: 'added\n' }),
      completionResponse({ text: 'done' }),
    )
    const result = await runDsh(['run', '--yes', '--worktree=gamma', '--worktree-end', 'merge', 'add a file'], {
      home,
      cwd: repo,
      modelUrl: model.url,
    })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain('uncommitted changes (shared.txt)')
    expect(result.stderr).toContain('merged dsh/gamma into main (fast-forward)')
    expect(readFileSync(join(repo, 'new.txt'), 'utf8')).toBe('added\n')
    // The user's own uncommitted edit is untouched by the merge.
    expect(readFileSync(join(repo, 'shared.txt'), 'utf8')).toBe('local edit\n')
    expect(worktreeList()).toEqual([])

    const carried = await server(completionResponse({ text: 'looked' }))
    const second = await runDsh(['run', '--worktree=delta', '--carry-changes', 'look'], {
      home,
      cwd: repo,
      modelUrl: carried.url,
    })
    expect(second.code, second.stderr).toBe(0)
    expect(second.stderr).toContain('carried the uncommitted changes')
    expect(git(repo, 'show', 'dsh/delta:shared.txt')).toBe('local edit')
  }, 60_000)

  it('a killed session leaves an orphan that dsh worktrees lists and prune clears, its work kept on the branch', async () => {
    const model = await server(call('w1', 'write', { path: 'half.txt', content: 'half done\n' }), { type: 'hang' })
    const child = startDsh(['run', '--yes', '--worktree=crash', 'work'], { home, cwd: repo, modelUrl: model.url })
    await model.waitForRequests(2, 20_000)
    child.proc.kill('SIGKILL')
    await child.exited
    const listed = worktreeList()
    expect(listed).toHaveLength(1)
    expect(listed[0]).toMatchObject({ name: 'crash', state: 'orphaned', dirty: true })

    const pruned = await runDsh(['worktrees', 'prune'], { home, cwd: repo })
    expect(pruned.code, pruned.stderr).toBe(0)
    expect(existsSync(listed[0]?.path as string)).toBe(false)
    expect(worktreeList()).toEqual([])
    expect(git(repo, 'worktree', 'list', '--porcelain')).not.toContain('crash')
    expect(git(repo, 'show', 'dsh/crash:half.txt')).toBe('half done')
  }, 60_000)

  it('the worktree is the sandbox writable root and rewind works in it', async () => {
    const model = await server(
      call('w1', 'write', { path: 'notes.txt', content: 'a note\n' }),
      completionResponse({ text: 'noted' }),
    )
    const result = await runDsh(['run', '--yes', '--worktree=rw', 'note it'], { home, cwd: repo, modelUrl: model.url })
    expect(result.code, result.stderr).toBe(0)
    const [listed] = worktreeList()
    const worktree = listed?.path as string
    const sessionId = (listed as { sessionId?: string }).sessionId as string
    expect(readFileSync(join(worktree, 'notes.txt'), 'utf8')).toBe('a note\n')
    // The request the model got names the worktree, not the repository, as where it may write.
    const system = JSON.stringify(model.requests[0]?.body.messages)
    expect(system).toContain(`may write only to: ${worktree}`)
    expect(system).not.toContain(`may write only to: ${repo},`)
    // /undo from the command line takes the turn's file back out of the worktree.
    const undo = await runDsh(['sessions', 'rewind', sessionId, '--undo'], { home, cwd: repo })
    expect(undo.code, undo.stderr).toBe(0)
    expect(existsSync(join(worktree, 'notes.txt'))).toBe(false)
    expect(existsSync(join(repo, 'notes.txt'))).toBe(false)
  }, 60_000)

  it('a worktree whose repository was deleted is listed missing and pruned', async () => {
    const model = await server(
      call('w', 'write', { path: 'x.txt', content: 'x\n' }),
      completionResponse({ text: 'ok' }),
    )
    const kept = await runDsh(['run', '--yes', '--worktree=stays', 'write x'], { home, cwd: repo, modelUrl: model.url })
    expect(kept.code, kept.stderr).toBe(0)
    rmSync(repo, { recursive: true, force: true })
    rmSync(join(root, 'app.worktrees'), { recursive: true, force: true })
    const elsewhere = mkdtempSync(join(tmpdir(), 'dsh-wt-elsewhere-'))
    try {
      const listed = worktreeList(elsewhere)
      expect(listed.map((view) => [view.name, view.state])).toEqual([['stays', 'missing']])
      const pruned = await runDsh(['worktrees', 'prune'], { home, cwd: elsewhere })
      expect(pruned.code, pruned.stderr).toBe(0)
      expect(worktreeList(elsewhere)).toEqual([])
    } finally {
      rmSync(elsewhere, { recursive: true, force: true })
    }
  }, 60_000)

  it('refuses a folder that is not a git repository, with the reason, and makes nothing', async () => {
    const plain = join(root, 'plain')
    mkdirSync(plain)
    const result = await runDsh(['run', '--worktree', 'do it'], { home, cwd: plain })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain('is not in a git repository')
    expect(existsSync(join(home, 'worktrees'))).toBe(false)
  })
})

describe('a subagent with isolation: worktree', () => {
  it('works on its own branch, its report names it, and dsh worktrees merge brings its change in', async () => {
    const model = await server(
      call('t1', 'task', { prompt: 'add notes.txt', description: 'notes', isolation: 'worktree' }),
      call('c1', 'write', { path: 'notes.txt', content: 'from the child\n' }),
      completionResponse({ text: 'child wrote notes.txt' }),
      completionResponse({ text: 'parent done' }),
    )
    const result = await runDsh(['run', '--yes', 'delegate it'], { home, cwd: repo, modelUrl: model.url })
    expect(result.code, result.stderr).toBe(0)
    // The parent's workspace does not have it; the child's branch does.
    expect(existsSync(join(repo, 'notes.txt'))).toBe(false)
    const [listed] = worktreeList()
    expect(listed).toMatchObject({ kind: 'subagent', state: 'kept', ahead: 1 })
    const branch = listed?.branch as string
    expect(git(repo, 'show', `${branch}:notes.txt`)).toBe('from the child')
    // The report the parent model got (durable in its log) names the branch and the file.
    const [report] = toolResults('task')
    expect(report).toContain(`its changes are on branch ${branch}`)
    expect(report).toContain('notes.txt')
    // The child's own session worked in the worktree.
    const headers = readdirSync(join(home, 'sessions'))
      .filter((name) => name.endsWith('.jsonl'))
      .map((file) => JSON.parse(readFileSync(join(home, 'sessions', file), 'utf8').split('\n')[0] as string))
    expect(headers.map((header) => header.cwd).sort()).toEqual([repo, listed?.path].sort())

    const merged = await runDsh(['worktrees', 'merge', listed?.name as string], { home, cwd: repo })
    expect(merged.code, merged.stderr).toBe(0)
    expect(readFileSync(join(repo, 'notes.txt'), 'utf8')).toBe('from the child\n')
    expect(worktreeList()).toEqual([])
  }, 60_000)
})
