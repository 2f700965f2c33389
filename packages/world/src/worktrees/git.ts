// Git worktrees dsh creates for a session or a subagent, and the record of each under
// $DSH_HOME/worktrees (so a crash between two steps never leaves one nobody can find). Plain code, no
// Cordis: the CLI creates a session's worktree before it boots (the worktree is the session's folder).
// Git runs with hooks off (a repository's hooks are the repository's code, not the user's consent) and
// never prompts.
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { homedir, hostname } from 'node:os'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'
import { HarnessError } from '@dsh/kernel/errors'
import { ownerAlive, processStartTime } from '@dsh/session/store'
import type {
  MergeMode,
  MergeResult,
  WorktreeCreate,
  WorktreeCreated,
  WorktreeOwner,
  WorktreeRecord,
  WorktreeState,
  WorktreeView,
} from './index.js'

/** What a worktree's name may be (it is also a branch name and a folder name). */
export const WORKTREE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/
const BRANCH_PREFIX = 'dsh/'

interface GitResult {
  code: number
  stdout: string
  stderr: string
}

/** Runs git in `cwd` without hooks, prompts or editors; resolves with the exit code (never rejects on one). */
function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<GitResult> {
  // A folder that is gone (a deleted repository) is git's failure to report, not a missing git.
  if (!existsSync(cwd)) return Promise.resolve({ code: 128, stdout: '', stderr: `${cwd} does not exist` })
  return new Promise((done, fail) => {
    execFile(
      'git',
      ['-c', 'core.hooksPath=/dev/null', ...args],
      {
        cwd,
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_EDITOR: 'true', GIT_MERGE_AUTOEDIT: 'no', ...env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error && typeof (error as { code?: unknown }).code !== 'number') {
          const code = (error as NodeJS.ErrnoException).code
          if (code === 'ENOENT')
            fail(
              new HarnessError('WORKTREE_NO_GIT', 'git is not installed: worktrees need it (apt-get install git)', {}),
            )
          else fail(error)
          return
        }
        done({ code: error ? Number((error as { code: number }).code) : 0, stdout, stderr })
      },
    )
  })
}

async function gitOk(cwd: string, args: string[], what: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const result = await git(cwd, args, env)
  if (result.code !== 0) {
    throw new HarnessError('WORKTREE_GIT_FAILED', `${what}: ${result.stderr.trim() || `git exited ${result.code}`}`, {
      args,
    })
  }
  return result.stdout
}

/** The identity dsh commits with when the user has none configured (the commit says who it was for). */
async function identityEnv(cwd: string): Promise<NodeJS.ProcessEnv> {
  const email = await git(cwd, ['config', '--get', 'user.email'])
  const name = await git(cwd, ['config', '--get', 'user.name'])
  if (email.code === 0 && name.code === 0) return {}
  return {
    GIT_AUTHOR_NAME: name.stdout.trim() || 'dsh',
    GIT_AUTHOR_EMAIL: email.stdout.trim() || 'dsh@localhost',
    GIT_COMMITTER_NAME: name.stdout.trim() || 'dsh',
    GIT_COMMITTER_EMAIL: email.stdout.trim() || 'dsh@localhost',
  }
}

/** This process as a worktree's owner. */
export function currentOwner(): WorktreeOwner {
  const start = processStartTime(process.pid)
  return { pid: process.pid, host: hostname(), ...(start === undefined ? {} : { startTime: start }) }
}

function generatedName(): string {
  return `wt-${randomBytes(3).toString('hex')}`
}

export interface GitWorktreesOptions {
  /** $DSH_HOME: the records live in its `worktrees` folder. */
  home: string
  /**
   * Where new worktrees go (`worktrees.dir`: `~/` is the user's home, a relative path is the
   * repository's); default: `<repo>.worktrees` beside the repository.
   */
  dir?: string
}

export class GitWorktrees {
  readonly registry: string

  constructor(private readonly options: GitWorktreesOptions) {
    this.registry = join(options.home, 'worktrees')
  }

  /** The top folder of the repository `cwd` is in; WORKTREE_NOT_A_REPO with the reason when it is not in one. */
  async repositoryOf(cwd: string): Promise<string> {
    const top = await git(cwd, ['rev-parse', '--show-toplevel']).catch((error: unknown) => {
      if (error instanceof HarnessError) throw error
      return { code: 1, stdout: '', stderr: String(error) }
    })
    if (top.code !== 0) {
      throw new HarnessError(
        'WORKTREE_NOT_A_REPO',
        `${cwd} is not in a git repository, so it cannot have a worktree (git init and a first commit make it one; or run without --worktree)`,
        { cwd },
      )
    }
    return realpathSync(top.stdout.trim())
  }

  /** Creates a worktree on a new branch `dsh/<name>` from the repository's HEAD, recorded before git makes it. */
  async create(request: WorktreeCreate): Promise<WorktreeCreated> {
    const repo = await this.repositoryOf(request.cwd)
    const name = request.name ?? generatedName()
    if (!WORKTREE_NAME.test(name)) {
      throw new HarnessError(
        'WORKTREE_NAME_INVALID',
        `worktree name ${JSON.stringify(name)}: use letters, digits, '.', '_' or '-' (at most 63, starting with a letter or digit)`,
        { name },
      )
    }
    const branch = `${BRANCH_PREFIX}${name}`
    const head = await git(repo, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'])
    if (head.code !== 0) {
      throw new HarnessError(
        'WORKTREE_NO_COMMIT',
        `${repo} has no commit yet: a worktree starts from HEAD (commit something first)`,
        { repo },
      )
    }
    const base = head.stdout.trim()
    if ((await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`])).code === 0) {
      throw new HarnessError(
        'WORKTREE_EXISTS',
        `branch ${branch} already exists in ${repo}: choose another name, or dsh worktrees discard ${name}`,
        { name, branch },
      )
    }
    const dir = this.options.dir?.replace(/^~(?=\/|$)/, homedir())
    const root = dir ? resolve(repo, dir) : join(dirname(repo), `${basename(repo)}.worktrees`)
    const path = join(root, name)
    if (existsSync(path)) {
      throw new HarnessError('WORKTREE_EXISTS', `${path} already exists: choose another worktree name`, { path })
    }
    const baseRef = (await git(repo, ['symbolic-ref', '--quiet', '--short', 'HEAD'])).stdout.trim() || undefined
    const status = await gitOk(repo, ['status', '--porcelain=v1', '-z'], 'reading the repository status')
    const uncommitted = status
      .split('\0')
      .filter(Boolean)
      .map((entry) => entry.slice(3))
    const record: WorktreeRecord = {
      name,
      repo,
      path,
      branch,
      base,
      ...(baseRef ? { baseRef } : {}),
      createdAt: new Date().toISOString(),
      kind: request.kind,
      owner: request.owner ?? currentOwner(),
      ...(request.sessionId ? { sessionId: request.sessionId } : {}),
    }
    // The record first: a crash after it and before git is a "missing" worktree prune clears.
    this.write(record)
    try {
      mkdirSync(root, { recursive: true })
      await gitOk(repo, ['worktree', 'add', '-b', branch, path, base], 'creating the worktree')
      record.path = realpathSync(path)
      this.write(record)
    } catch (error) {
      this.forget(record)
      throw error
    }
    let carried = false
    if (request.carry && uncommitted.length > 0) {
      const stash = (await gitOk(repo, ['stash', 'create'], 'saving the uncommitted changes')).trim()
      if (stash) {
        await gitOk(record.path, ['stash', 'apply', stash], 'carrying the uncommitted changes over')
        carried = true
      }
    }
    return { record, uncommitted, carried }
  }

  /** Every recorded worktree (and `dsh/` worktrees git knows in `repo` without a record), with its state. */
  async list(repo?: string): Promise<WorktreeView[]> {
    const records = this.records()
    const views: WorktreeView[] = []
    for (const record of records) views.push(await this.view(record))
    if (repo) {
      const known = new Set(records.map((record) => record.path))
      for (const found of await this.unrecorded(repo, known)) views.push(await this.view(found))
    }
    return views
  }

  /** The worktree named `name` (or by its branch or path), preferring one of `repo`. */
  async find(name: string, repo?: string): Promise<WorktreeRecord> {
    const all = [...this.records(), ...(repo ? await this.unrecorded(repo, new Set()) : [])]
    const matches = all.filter(
      (record) => record.name === name || record.branch === name || record.path === resolve(name),
    )
    const own = matches.filter((record) => record.repo === repo)
    const found = own[0] ?? (matches.length === 1 ? matches[0] : undefined)
    if (found) return found
    const names = all.map((record) => record.name)
    throw new HarnessError(
      'WORKTREE_NOT_FOUND',
      matches.length > 1
        ? `${name} names worktrees of several repositories; run this in the repository you mean`
        : `no dsh worktree named ${name}${names.length ? ` (there are: ${names.join(', ')})` : ' (dsh worktrees lists them)'}`,
      { name },
    )
  }

  /** Commits everything changed in the worktree onto its branch; false when nothing changed. */
  async save(record: WorktreeRecord, message: string): Promise<boolean> {
    if (!existsSync(record.path)) return false
    await gitOk(record.path, ['add', '-A'], 'staging the worktree changes')
    const staged = await git(record.path, ['diff', '--cached', '--quiet'])
    if (staged.code === 0) return false
    await gitOk(
      record.path,
      ['commit', '--no-verify', '--quiet', '-m', message],
      'committing the worktree changes',
      await identityEnv(record.path),
    )
    return true
  }

  /** What the branch changes against where it started (committed work only; `save` first). */
  async diff(record: WorktreeRecord): Promise<{ stat: string; files: string[] }> {
    const range = `${record.base}..${record.branch}`
    const [stat, files] = await Promise.all([
      gitOk(record.repo, ['diff', '--stat', range], 'reading the branch diff'),
      gitOk(record.repo, ['diff', '--name-only', '-z', range], 'reading the branch diff'),
    ])
    return { stat: stat.trimEnd(), files: files.split('\0').filter(Boolean) }
  }

  /** The branch's changes as a patch (committed work only; `save` first). */
  patch(record: WorktreeRecord): Promise<string> {
    return gitOk(record.repo, ['diff', `${record.base}..${record.branch}`], 'reading the branch diff')
  }

  /**
   * Merges the branch into the repository's current branch (its uncommitted work is saved first). A
   * conflict aborts the merge, so nothing is half-merged, and is reported with the files. Once merged,
   * the worktree and its branch go.
   */
  async merge(record: WorktreeRecord, mode: MergeMode = 'auto'): Promise<MergeResult> {
    await this.save(record, `dsh: work of worktree ${record.name}`)
    const into = (await git(record.repo, ['symbolic-ref', '--quiet', '--short', 'HEAD'])).stdout.trim() || 'HEAD'
    const before = (await gitOk(record.repo, ['rev-parse', 'HEAD'], 'reading HEAD')).trim()
    const ahead = Number(
      (await gitOk(record.repo, ['rev-list', '--count', `${before}..${record.branch}`], 'counting')).trim(),
    )
    if (ahead === 0) {
      await this.remove(record, { deleteBranch: true })
      return { how: 'up-to-date', into, commit: before }
    }
    const flags = mode === 'ff-only' ? ['--ff-only'] : mode === 'no-ff' ? ['--no-ff'] : []
    const message = `Merge dsh worktree ${record.name} (${record.branch})`
    const result = await git(
      record.repo,
      ['merge', '--no-edit', ...flags, '-m', message, record.branch],
      await identityEnv(record.repo),
    )
    if (result.code !== 0) {
      const unmerged = await git(record.repo, ['diff', '--name-only', '--diff-filter=U'])
      const files = unmerged.stdout.split('\n').filter(Boolean)
      if (files.length > 0 || existsSync(join(await this.gitDir(record.repo), 'MERGE_HEAD')))
        await git(record.repo, ['merge', '--abort'])
      if (files.length > 0) {
        throw new HarnessError(
          'WORKTREE_MERGE_CONFLICT',
          `merging ${record.branch} into ${into} conflicts in ${files.join(', ')}; the merge was undone, nothing changed. Resolve it by hand (git merge ${record.branch}), or keep the branch, or dsh worktrees discard ${record.name}`,
          { files, branch: record.branch, into },
        )
      }
      throw new HarnessError(
        'WORKTREE_MERGE_REFUSED',
        `git would not merge ${record.branch} into ${into}: ${(result.stderr || result.stdout).trim()}; nothing changed`,
        { branch: record.branch, into },
      )
    }
    const after = (await gitOk(record.repo, ['rev-parse', 'HEAD'], 'reading HEAD')).trim()
    const parents = (await gitOk(record.repo, ['rev-list', '--parents', '-n', '1', after], 'reading the merge')).trim()
    await this.remove(record, { deleteBranch: true })
    return { how: parents.split(' ').length > 2 ? 'merge-commit' : 'fast-forward', into, commit: after }
  }

  /** Removes the worktree, its branch and its record: its work is gone. */
  async discard(record: WorktreeRecord): Promise<void> {
    await this.remove(record, { deleteBranch: true })
  }

  /** Keeps the branch and the worktree for later (no owner any more): `dsh worktrees` lists it as kept. */
  async keep(record: WorktreeRecord, message = `dsh: work of worktree ${record.name}`): Promise<void> {
    await this.save(record, message)
    const { owner: _, ...rest } = record
    this.write({ ...rest, kept: true })
  }

  /**
   * Clears what crashes left: records whose worktree is gone, and worktrees whose owner died. An
   * orphan's work is committed onto its branch and the branch kept (only the folder goes); an orphan
   * with no work loses its branch too. Kept and live worktrees are left alone.
   */
  async prune(repo?: string): Promise<{ removed: WorktreeView[]; savedBranches: WorktreeView[] }> {
    const removed: WorktreeView[] = []
    const savedBranches: WorktreeView[] = []
    for (const view of await this.list(repo)) {
      if (view.state === 'active' || view.state === 'kept') continue
      if (view.state === 'missing') {
        await git(view.repo, ['worktree', 'prune']).catch(() => undefined)
        if (view.ahead === 0) await git(view.repo, ['branch', '-D', view.branch]).catch(() => undefined)
        this.forget(view)
        removed.push(view)
        continue
      }
      const saved = await this.save(view, `dsh: saved from an interrupted session (worktree ${view.name})`)
      if (saved || view.ahead > 0) {
        await this.remove(view, { deleteBranch: false })
        savedBranches.push(view)
      } else {
        await this.remove(view, { deleteBranch: true })
        removed.push(view)
      }
    }
    return { removed, savedBranches }
  }

  /** Marks a worktree as owned by the session `sessionId` (once the session has its id). */
  attachSession(record: WorktreeRecord, sessionId: string): void {
    record.sessionId = sessionId
    this.write(record)
  }

  private async remove(record: WorktreeRecord, options: { deleteBranch: boolean }): Promise<void> {
    if (existsSync(record.path)) {
      await gitOk(record.repo, ['worktree', 'remove', '--force', record.path], 'removing the worktree')
    }
    await git(record.repo, ['worktree', 'prune'])
    if (options.deleteBranch) await git(record.repo, ['branch', '-D', record.branch])
    this.forget(record)
  }

  private async view(record: WorktreeRecord): Promise<WorktreeView> {
    const present = existsSync(record.path)
    let dirty = false
    let ahead = 0
    if (present) {
      const status = await git(record.path, ['status', '--porcelain'])
      dirty = status.code === 0 && status.stdout.trim() !== ''
    }
    const count = await git(record.repo, ['rev-list', '--count', `${record.base}..${record.branch}`])
    if (count.code === 0) ahead = Number(count.stdout.trim())
    const state: WorktreeState = !present
      ? 'missing'
      : record.kept
        ? 'kept'
        : record.owner && ownerAlive(record.owner)
          ? 'active'
          : 'orphaned'
    return { ...record, state, dirty, ahead }
  }

  /** `dsh/` worktrees git lists in `repo` that have no record (made by hand, or a record lost). */
  private async unrecorded(repo: string, known: Set<string>): Promise<WorktreeRecord[]> {
    const listing = await git(repo, ['worktree', 'list', '--porcelain'])
    if (listing.code !== 0) return []
    const top = await this.repositoryOf(repo).catch(() => repo)
    const out: WorktreeRecord[] = []
    for (const block of listing.stdout.split('\n\n')) {
      const path = /^worktree (.+)$/m.exec(block)?.[1]
      const branch = /^branch refs\/heads\/(.+)$/m.exec(block)?.[1]
      if (!path || !branch?.startsWith(BRANCH_PREFIX) || known.has(path) || path === top) continue
      const base = (await git(repo, ['merge-base', 'HEAD', branch])).stdout.trim()
      out.push({
        name: branch.slice(BRANCH_PREFIX.length),
        repo: top,
        path,
        branch,
        base,
        createdAt: '',
        kind: 'session',
      })
    }
    return out
  }

  private async gitDir(repo: string): Promise<string> {
    const dir = (await gitOk(repo, ['rev-parse', '--git-dir'], 'finding the git directory')).trim()
    return isAbsolute(dir) ? dir : join(repo, dir)
  }

  private fileOf(record: Pick<WorktreeRecord, 'path'>): string {
    return join(this.registry, `${createHash('sha256').update(record.path).digest('hex').slice(0, 24)}.json`)
  }

  private records(): WorktreeRecord[] {
    let names: string[]
    try {
      names = readdirSync(this.registry).filter((name) => name.endsWith('.json'))
    } catch {
      return []
    }
    const out: WorktreeRecord[] = []
    for (const name of names) {
      try {
        const record = JSON.parse(readFileSync(join(this.registry, name), 'utf8')) as WorktreeRecord
        if (typeof record.path === 'string' && typeof record.repo === 'string' && typeof record.branch === 'string') {
          // A record written before its worktree existed is keyed by the path as it was then.
          record.file = name
          out.push(record)
        }
      } catch {}
    }
    return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt))
  }

  private write(record: WorktreeRecord): void {
    mkdirSync(this.registry, { recursive: true, mode: 0o700 })
    const { file: previous, ...data } = record
    const file = previous ? join(this.registry, previous) : this.fileOf(record)
    const temp = `${file}.${process.pid}.tmp`
    writeFileSync(temp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 })
    renameSync(temp, file)
    record.file = basename(file)
  }

  private forget(record: WorktreeRecord): void {
    rmSync(record.file ? join(this.registry, record.file) : this.fileOf(record), { force: true })
  }
}
