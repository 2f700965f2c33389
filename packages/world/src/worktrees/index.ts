// @dsh/world/worktrees: the worktree seam `ctx.worktrees` (issue 38). A session or a subagent can work
// in its own git worktree on a new branch `dsh/<name>`, so agents running side by side on one repository
// never see each other's edits until the user merges one. The worktree is the session's folder, so the
// sandbox makes it the writable root and rewind snapshots it like any workspace.
// Provider: `@dsh/world/worktrees/local` (git on this machine; the SSH world has none).
//
// Codes: WORKTREE_NOT_A_REPO, WORKTREE_NO_COMMIT, WORKTREE_NAME_INVALID, WORKTREE_EXISTS,
// WORKTREE_NOT_FOUND, WORKTREE_MERGE_CONFLICT (the merge was undone), WORKTREE_MERGE_REFUSED,
// WORKTREE_GIT_FAILED, WORKTREE_NO_GIT.
import type {} from '@dsh/kernel'

declare module 'cordis' {
  interface Context {
    worktrees: Worktrees
  }
}

/** The process that works in a worktree: while it lives, the worktree is `active`. */
export interface WorktreeOwner {
  pid: number
  startTime?: number
  host: string
}

export interface WorktreeRecord {
  name: string
  /** The top folder of the repository it was made from (where a merge lands). */
  repo: string
  path: string
  /** `dsh/<name>`. */
  branch: string
  /** The commit it started from. */
  base: string
  /** The branch the repository was on then, if any. */
  baseRef?: string
  createdAt: string
  kind: 'session' | 'subagent'
  owner?: WorktreeOwner
  sessionId?: string
  /** The user chose to keep it: prune leaves it alone. */
  kept?: boolean
  /** The registry file name (set when read or written). */
  file?: string
}

/**
 * `active`: its owner runs. `kept`: kept on purpose. `orphaned`: its owner is gone (a crash, or an
 * end without a choice). `missing`: the record outlived its folder.
 */
export type WorktreeState = 'active' | 'kept' | 'orphaned' | 'missing'

export interface WorktreeView extends WorktreeRecord {
  state: WorktreeState
  /** Uncommitted changes in the worktree. */
  dirty: boolean
  /** Commits on the branch since `base`. */
  ahead: number
}

export interface WorktreeCreate {
  /** A folder inside the repository. */
  cwd: string
  /** Default: a generated `wt-xxxxxx`. */
  name?: string
  kind: 'session' | 'subagent'
  owner?: WorktreeOwner
  sessionId?: string
  /** Carry the repository's uncommitted (tracked) changes into the worktree, through a stash commit. */
  carry?: boolean
}

export interface WorktreeCreated {
  record: WorktreeRecord
  /** Paths with uncommitted changes in the repository: not in the worktree unless `carried`. */
  uncommitted: string[]
  carried: boolean
}

/** `auto`: fast-forward when possible, else a merge commit. */
export type MergeMode = 'auto' | 'ff-only' | 'no-ff'

export interface MergeResult {
  how: 'fast-forward' | 'merge-commit' | 'up-to-date'
  /** The branch merged into. */
  into: string
  commit: string
}

export interface Worktrees {
  create(request: WorktreeCreate): Promise<WorktreeCreated>
  list(repo?: string): Promise<WorktreeView[]>
  find(name: string, repo?: string): Promise<WorktreeRecord>
  save(record: WorktreeRecord, message: string): Promise<boolean>
  diff(record: WorktreeRecord): Promise<{ stat: string; files: string[] }>
  merge(record: WorktreeRecord, mode?: MergeMode): Promise<MergeResult>
  discard(record: WorktreeRecord): Promise<void>
  keep(record: WorktreeRecord, message?: string): Promise<void>
}
