// `--worktree [name]` of `dsh` and `dsh run`: the session works in a new git worktree on branch
// dsh/<name>, made before the runtime boots (the worktree is the session's folder, so the sandbox
// makes it the writable root and project configuration is read there). At the end the branch's
// changes are committed and shown, and the user merges, keeps or discards them.
import { realpathSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { dshHome } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel/errors'
import { peekStringSetting } from '@dsh/settings'
import { FolderTrust } from '@dsh/settings/trust'
import type { WorktreeRecord } from '@dsh/world/worktrees'
import { GitWorktrees, WORKTREE_NAME } from '@dsh/world/worktrees/git'
import type { ComposeRequest } from './config.js'
import type { Io } from './io.js'

export type WorktreeEnd = 'merge' | 'keep' | 'discard'

export interface OpenWorktree {
  record: WorktreeRecord
  /** Where the session works: the worktree, at the same place inside it as the folder the user was in. */
  cwd: string
  worktrees: GitWorktrees
}

/** The worktrees of this user, in the folder the `worktrees.dir` setting names. */
export function userWorktrees(request: ComposeRequest, cwd = request.cwd ?? process.cwd()): GitWorktrees {
  const env = request.env ?? process.env
  const home = dshHome(env)
  const dir = peekStringSetting('worktrees.dir', {
    home,
    cwd,
    env,
    envName: 'DSH_WORKTREES_DIR',
    flags: request.options.set,
    trustFolder: request.options.trust === true,
  })
  return new GitWorktrees({ home, ...(dir ? { dir: dir.value } : {}) })
}

/** Creates the session's worktree from the repository `cwd` is in, and says what the session starts with. */
export async function openWorktree(
  request: ComposeRequest,
  io: Io,
  options: { cwd: string; name?: string; carry?: boolean },
): Promise<OpenWorktree> {
  const worktrees = userWorktrees(request, options.cwd)
  const created = await worktrees.create({
    cwd: options.cwd,
    kind: 'session',
    ...(options.name ? { name: options.name } : {}),
    ...(options.carry ? { carry: true } : {}),
  })
  const { record } = created
  const inside = relative(record.repo, realpathSync(resolve(options.cwd)))
  const cwd = join(record.path, inside)
  io.err(
    `dsh: working in worktree ${record.path} on branch ${record.branch} (from ${record.baseRef ?? 'HEAD'} at ${record.base.slice(0, 9)})`,
  )
  if (created.uncommitted.length > 0) {
    const files = created.uncommitted.slice(0, 5).join(', ') + (created.uncommitted.length > 5 ? ', ...' : '')
    io.err(
      created.carried
        ? `dsh: carried the uncommitted changes to tracked files over (${files}); untracked files stay behind`
        : `dsh: note: the repository has uncommitted changes (${files}); the worktree starts from the last commit without them (--carry-changes brings them along)`,
    )
  }
  // A worktree is a new folder: it is trusted for exactly what the user trusted in the repository.
  const trust = new FolderTrust(dshHome(request.env ?? process.env))
  try {
    trust.inherit(resolve(options.cwd), cwd)
  } catch (error) {
    io.err(`dsh: warning: cannot carry the folder's trust to the worktree: ${(error as Error).message}`)
  }
  return { record, cwd, worktrees }
}

/**
 * The end of a worktree session: its changes are committed on the branch and shown; then `choice`
 * (asked of the user, or given) decides. Without a choice the branch is kept and the commands named.
 */
export async function closeWorktree(
  open: OpenWorktree,
  io: Io,
  options: { sessionId?: string; choose?: (stat: string) => Promise<WorktreeEnd | undefined> },
): Promise<void> {
  const { record, worktrees } = open
  if (options.sessionId) worktrees.attachSession(record, options.sessionId)
  await worktrees.save(record, `dsh: session ${options.sessionId ?? record.name} in worktree ${record.name}`)
  const { stat, files } = await worktrees.diff(record)
  if (files.length === 0) {
    await worktrees.discard(record)
    io.err(`dsh: the session changed nothing; worktree ${record.name} removed`)
    return
  }
  io.err(`dsh: branch ${record.branch} changes ${files.length === 1 ? '1 file' : `${files.length} files`}:`)
  for (const line of stat.split('\n')) io.err(`dsh:  ${line}`)
  const choice = (await options.choose?.(stat)) ?? 'keep'
  if (choice === 'merge') {
    try {
      const merged = await worktrees.merge(record)
      io.err(`dsh: merged ${record.branch} into ${merged.into} (${merged.how}); worktree removed`)
      return
    } catch (error) {
      if (!(error instanceof HarnessError)) throw error
      io.err(`dsh: ${error.message}`)
    }
  } else if (choice === 'discard') {
    await worktrees.discard(record)
    io.err(`dsh: discarded ${record.branch} and its worktree`)
    return
  }
  await worktrees.keep(record)
  io.err(
    `dsh: kept ${record.branch} in ${record.path}; later: dsh worktrees merge ${record.name}, or dsh worktrees discard ${record.name}`,
  )
}

/**
 * `--worktree` takes an optional name, so commander hands it the next word: a value that cannot be a
 * name (`dsh run --worktree "fix the test"`) is the task's, and the worktree's name is generated.
 */
export function worktreeOption(value: string | boolean | undefined, args: string[]): string | undefined {
  if (typeof value !== 'string') return undefined
  if (WORKTREE_NAME.test(value)) return value
  args.unshift(value)
  return undefined
}
