// @dsh/ssh/world: how the remote world is composed. Each local provider row of the execution world is
// swapped for its SSH provider under the same id with the same config (modes, timeouts, network), the
// connection row is added, and the rows that can only act on this machine (PTY terminals, language
// servers) are disabled. Pure data: the CLI applies it as a launcher layer.
import type { RowSpec } from '@dsh/composition'

/** Local provider module -> its provider in the SSH world. */
export const REMOTE_PROVIDERS: Readonly<Record<string, string>> = Object.freeze({
  '@dsh/world/subprocess/local': '@dsh/ssh/subprocess',
  '@dsh/world/shell/bash-sandbox': '@dsh/ssh/shell',
  '@dsh/world/shell/bash-local': '@dsh/ssh/shell',
  '@dsh/world/fs/sandbox': '@dsh/ssh/fs',
  '@dsh/world/fs/local': '@dsh/ssh/fs',
  '@dsh/world/sandbox/bwrap': '@dsh/ssh/sandbox',
  '@dsh/world/sandbox/seatbelt': '@dsh/ssh/sandbox',
  '@dsh/world/sandbox/policy': '@dsh/ssh/policy',
})

/** Rows that start processes or watch files on this machine outside `ctx.subprocess` / `ctx.fs`. */
export const LOCAL_ONLY: readonly string[] = Object.freeze([
  '@dsh/world/terminal/pty',
  '@dsh/world/terminal/tools',
  '@dsh/world/snapshots/shadow-git',
  '@dsh/world/worktrees/local',
  '@dsh/lsp/stdio',
  '@dsh/lsp/tools',
])

/** The launcher rows that turn `rows` (an effective tree) into the SSH world for `target`. */
export function remoteWorldRows(
  rows: readonly { id: string; use: string; config?: unknown }[],
  target: string,
): RowSpec[] {
  const out: RowSpec[] = [
    // Its keys are declared in base; repeated here so that a profile that disabled it still composes.
    { id: 'ssh-settings', use: '@dsh/ssh/settings' },
    { id: 'ssh', use: '@dsh/ssh/connection', config: { target } },
  ]
  for (const row of rows) {
    const remote = REMOTE_PROVIDERS[row.use]
    if (remote) out.push({ id: row.id, use: remote, ...(row.config === undefined ? {} : { config: row.config }) })
    else if (LOCAL_ONLY.includes(row.use)) out.push({ id: row.id, disabled: true })
  }
  return out
}
