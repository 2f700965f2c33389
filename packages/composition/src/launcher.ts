// The launcher row: what the process that started dsh knows (command, arguments, cwd, profile) as a
// service, so product rows read launch facts through `ctx.launcher` instead of process globals.
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { type Context, Service } from '@dsh/kernel'

declare module 'cordis' {
  interface Context {
    launcher: LauncherService
  }
  interface Events {
    /** A plugin asks the launcher to end the process with this exit code. */
    'launcher/exit'(code: number): void
  }
}

export interface LauncherConfig {
  /** The subcommand that started this process (`run`, `web`, `check`...). */
  command: string
  /** Its positional arguments. */
  args: string[]
  cwd: string
  profile: string
  home: string
  /**
   * `--trust`: this run loads the folder's gated project configuration (`.mcp.json`, hooks, presets
   * with rows...) as if the folder were trusted, without recording it.
   */
  trustFolder?: boolean
  /** The argv that starts this dsh again (node and the CLI script), for rows that run dsh as a child. */
  self?: string[]
}

export class LauncherService extends Service {
  static readonly provide = 'launcher'

  constructor(
    ctx: Context,
    readonly config: LauncherConfig,
  ) {
    super(ctx, 'launcher')
  }

  /** Asks the launcher to exit with `code` after disposing the tree. */
  requestExit(code: number): void {
    this.ctx.emit('launcher/exit', code)
  }
}

export default LauncherService

/** `$DSH_HOME` as this process sees it: the launcher row's, else the environment's, else `~/.dsh`. */
export function launcherHome(ctx: Context): string {
  return resolve(ctx.get('launcher')?.config.home ?? process.env.DSH_HOME ?? join(homedir(), '.dsh'))
}
