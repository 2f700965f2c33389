// The footer's git facts: the branch read from `.git/HEAD` (no process), and whether the worktree has
// changes, from one `git status` run after each turn (bounded, and cancelled when the chat closes).
import { execFile } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

export interface GitFacts {
  /** The branch, or a short commit id when HEAD is detached. */
  branch: string
  /** Uncommitted changes or untracked files; undefined until `git status` answered (or when it cannot). */
  dirty?: boolean
}

/** The git directory of the repository holding `cwd` (a worktree's `.git` file is followed), if any. */
function gitDir(cwd: string): string | undefined {
  let dir = resolve(cwd)
  for (;;) {
    const candidate = join(dir, '.git')
    try {
      if (statSync(candidate).isDirectory()) return candidate
      const pointer = /^gitdir: (.+)$/m.exec(readFileSync(candidate, 'utf8'))?.[1]?.trim()
      if (pointer) return resolve(dir, pointer)
    } catch {
      // No .git here: look in the parent.
    }
    const parent = dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/** The branch of the repository holding `cwd`, read from its HEAD file; undefined outside a repository. */
export function gitBranch(cwd: string): string | undefined {
  const dir = gitDir(cwd)
  if (!dir) return undefined
  try {
    const head = readFileSync(join(dir, 'HEAD'), 'utf8').trim()
    const ref = /^ref: refs\/heads\/(.+)$/.exec(head)?.[1]
    return ref ?? head.slice(0, 7)
  } catch {
    return undefined
  }
}

/** Whether the worktree at `cwd` has changes (`git status --porcelain`); undefined when git cannot tell. */
export function gitDirty(cwd: string, signal: AbortSignal): Promise<boolean | undefined> {
  return new Promise((done) => {
    execFile(
      'git',
      ['--no-optional-locks', 'status', '--porcelain'],
      { cwd, signal, timeout: 2000, maxBuffer: 1 << 20 },
      (error, stdout) => {
        // More output than the buffer holds is certainly a dirty worktree.
        if ((error as { code?: unknown } | null)?.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') done(true)
        else done(error ? undefined : stdout.trim().length > 0)
      },
    )
  })
}
