// `dsh worktrees [ls|diff|merge|keep|discard|prune]`: the git worktrees dsh made for sessions and
// subagents, from the records in $DSH_HOME/worktrees and the `dsh/` worktrees git lists in this
// repository. No runtime boots: these are git operations on this machine.
import { HarnessError } from '@dsh/kernel/errors'
import { alignColumns } from '@dsh/surfaces/host'
import type { MergeMode, WorktreeView } from '@dsh/world/worktrees'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { printable } from '../printable.js'
import { userWorktrees } from '../worktree-session.js'

async function here(request: ComposeRequest) {
  const worktrees = userWorktrees(request)
  const repo = await worktrees.repositoryOf(request.cwd ?? process.cwd()).catch(() => undefined)
  return { worktrees, repo }
}

function describe(view: WorktreeView): string {
  const work = [
    view.ahead > 0 ? `${view.ahead} commit${view.ahead === 1 ? '' : 's'}` : '',
    view.dirty ? 'uncommitted changes' : '',
  ].filter(Boolean)
  return work.length > 0 ? work.join(' + ') : 'no changes'
}

export async function worktreesList(request: ComposeRequest, options: { json?: boolean }, io: Io): Promise<number> {
  const { worktrees, repo } = await here(request)
  const views = await worktrees.list(repo)
  if (options.json) {
    io.out(JSON.stringify(views, null, 2))
    return ExitCode.OK
  }
  if (views.length === 0) {
    io.err('dsh: no dsh worktrees (dsh --worktree or dsh run --worktree makes one)')
    return ExitCode.OK
  }
  const rows = [['NAME', 'STATE', 'KIND', 'BRANCH', 'CHANGES', 'PATH']]
  for (const view of views)
    rows.push([view.name, view.state, view.kind, view.branch, describe(view), printable(view.path)])
  for (const line of alignColumns(rows)) io.out(line)
  if (views.some((view) => view.state === 'orphaned' || view.state === 'missing'))
    io.err(
      'dsh: orphaned worktrees belong to sessions that ended without a choice; dsh worktrees prune clears them (their work is kept on the branch)',
    )
  return ExitCode.OK
}

export async function worktreesDiff(request: ComposeRequest, name: string, io: Io): Promise<number> {
  const { worktrees, repo } = await here(request)
  const record = await worktrees.find(name, repo)
  await worktrees.save(record, `dsh: work of worktree ${record.name}`)
  const patch = await worktrees.patch(record)
  if (!patch.trim()) io.err(`dsh: ${record.branch} changes nothing`)
  else io.out(patch.trimEnd())
  return ExitCode.OK
}

export async function worktreesMerge(
  request: ComposeRequest,
  name: string,
  options: { ffOnly?: boolean; noFf?: boolean },
  io: Io,
): Promise<number> {
  if (options.ffOnly && options.noFf) throw new HarnessError('USAGE', 'choose one of --ff-only and --no-ff', {})
  const { worktrees, repo } = await here(request)
  const record = await worktrees.find(name, repo)
  const mode: MergeMode = options.ffOnly ? 'ff-only' : options.noFf ? 'no-ff' : 'auto'
  const merged = await worktrees.merge(record, mode)
  io.err(
    merged.how === 'up-to-date'
      ? `dsh: ${record.branch} had nothing ${merged.into} lacks; worktree removed`
      : `dsh: merged ${record.branch} into ${merged.into} (${merged.how}, ${merged.commit.slice(0, 9)}); worktree and branch removed`,
  )
  return ExitCode.OK
}

export async function worktreesKeep(request: ComposeRequest, name: string, io: Io): Promise<number> {
  const { worktrees, repo } = await here(request)
  const record = await worktrees.find(name, repo)
  await worktrees.keep(record)
  io.err(`dsh: kept ${record.branch} in ${record.path}; prune leaves it alone`)
  return ExitCode.OK
}

export async function worktreesDiscard(request: ComposeRequest, name: string, io: Io): Promise<number> {
  const { worktrees, repo } = await here(request)
  const record = await worktrees.find(name, repo)
  await worktrees.discard(record)
  io.err(`dsh: discarded ${record.branch} and ${record.path}`)
  return ExitCode.OK
}

export async function worktreesPrune(request: ComposeRequest, io: Io): Promise<number> {
  const { worktrees, repo } = await here(request)
  const { removed, savedBranches } = await worktrees.prune(repo)
  for (const view of removed) io.err(`dsh: removed ${view.name} (${view.state}, no work on it)`)
  for (const view of savedBranches)
    io.err(`dsh: removed the folder of ${view.name}; its work is on branch ${view.branch} (git merge ${view.branch})`)
  if (removed.length + savedBranches.length === 0) io.err('dsh: nothing to prune')
  return ExitCode.OK
}
