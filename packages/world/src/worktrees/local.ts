// `ctx.worktrees` on this machine: git worktrees recorded under $DSH_HOME/worktrees, in the folder the
// `worktrees.dir` setting names (default: `<repo>.worktrees` beside the repository).
import { homedir } from 'node:os'
import { join } from 'node:path'
import type {} from '@dsh/composition'
import { type Context, Service } from '@dsh/kernel'
import type {} from '@dsh/settings'
import { GitWorktrees } from './git.js'
import type { MergeMode, WorktreeCreate, WorktreeRecord, Worktrees } from './index.js'

declare module '@dsh/settings' {
  interface SettingsMap {
    'worktrees.dir': string
  }
}

export const WORKTREES_DIR_ENV = 'DSH_WORKTREES_DIR'

export class LocalWorktrees extends Service implements Worktrees {
  static readonly inject = ['settings']
  private readonly home: string

  constructor(ctx: Context) {
    super(ctx, 'worktrees')
    this.home = ctx.get('launcher')?.config.home ?? process.env.DSH_HOME ?? join(homedir(), '.dsh')
    ctx.settings.define('worktrees.dir', {
      schema: { type: 'string' },
      default: '',
      description:
        'the folder new git worktrees go in (`dsh --worktree`, subagents with isolation: worktree); relative to the repository; empty: <repository>.worktrees beside it',
      env: WORKTREES_DIR_ENV,
      allowed: 'a folder path, e.g. ~/worktrees or ../wt',
    })
  }

  private git(): GitWorktrees {
    const dir = this.ctx.settings.get('worktrees.dir')
    return new GitWorktrees({ home: this.home, ...(dir ? { dir: expandHome(dir) } : {}) })
  }

  create(request: WorktreeCreate) {
    return this.git().create(request)
  }
  list(repo?: string) {
    return this.git().list(repo)
  }
  find(name: string, repo?: string) {
    return this.git().find(name, repo)
  }
  save(record: WorktreeRecord, message: string) {
    return this.git().save(record, message)
  }
  diff(record: WorktreeRecord) {
    return this.git().diff(record)
  }
  merge(record: WorktreeRecord, mode?: MergeMode) {
    return this.git().merge(record, mode)
  }
  discard(record: WorktreeRecord) {
    return this.git().discard(record)
  }
  keep(record: WorktreeRecord, message?: string) {
    return this.git().keep(record, message)
  }
}

/** `~/x` as the shell would read it. */
export function expandHome(path: string): string {
  return path === '~' || path.startsWith('~/') ? join(homedir(), path.slice(1)) : path
}

export default LocalWorktrees
