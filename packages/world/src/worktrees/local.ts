import type {} from '@dsh/composition'
import { launcherHome } from '@dsh/composition/launcher'
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
    this.home = launcherHome(ctx)
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
    return new GitWorktrees({ home: this.home, ...(dir ? { dir } : {}) })
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

export default LocalWorktrees
