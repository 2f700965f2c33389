// What every command does around its work: compose the profile's tree, boot it, optionally apply
// edits of the user's patch files live (`--watch-config`), and dispose the tree however the work ends.
import { boot, type TreeRuntime, watchConfig } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel'
import type {} from '@dsh/settings'
import { type ComposeRequest, type Composition, compose } from './config.js'
import type { Io } from './io.js'

export interface RuntimeScope {
  runtime: TreeRuntime
  composition: Composition
}

export interface RuntimeOptions {
  /**
   * Honour `--watch-config` (long-lived commands): a good edit of a patch file is applied to the
   * running tree, a bad one keeps the last good tree; both are reported on stderr and as the
   * `config/changed` event on the root, which surfaces forward to their clients.
   */
  watch?: boolean
  /**
   * Refuse to run when a settings file, variable or flag holds an invalid value (`CONFIG_SETTINGS_INVALID`,
   * exit 3). Default true; `dsh config` turns it off so that it can repair the bad value.
   */
  checkSettings?: boolean
  /**
   * Boot for the settings alone (`dsh config`): no session store, no remote world; rows left waiting
   * for the services those would provide do not stop the command.
   */
  settingsOnly?: boolean
}

/** Applies `--set KEY=VALUE` as the flag layer of ctx.settings, then checks every layer. */
function applySettings(scope: RuntimeScope, request: ComposeRequest, io: Io, check: boolean): void {
  const settings = scope.runtime.root.get('settings')
  const flags = request.options.set ?? []
  if (!settings) {
    if (flags.length === 0) return
    throw new HarnessError('CONFIG_NO_SETTINGS', '--set needs the settings row, which this profile disables', {})
  }
  for (const flag of flags) {
    const equals = flag.indexOf('=')
    if (equals < 1) throw new HarnessError('USAGE', `--set takes KEY=VALUE; got "${flag}"`, { flag })
    settings.setFlag(flag.slice(0, equals), flag.slice(equals + 1), `--set ${flag.slice(0, equals)}`)
  }
  if (check) for (const warning of settings.check()) io.err(`dsh: warning: ${warning}`)
}

export async function withRuntime<T>(
  request: ComposeRequest,
  io: Io,
  work: (scope: RuntimeScope) => Promise<T>,
  options: RuntimeOptions = {},
): Promise<T> {
  // Start-up phases (bench/startup.mjs): the command's modules are loaded; composed; rows imported in the
  // runtime; booted.
  performance.mark('dsh:compose-start')
  const composition = compose(options.settingsOnly ? { ...request, settingsOnly: true } : request)
  performance.mark('dsh:composed')
  for (const warning of composition.tree.warnings) io.err(`dsh: warning: ${warning}`)
  const runtime = await boot(composition.tree, {
    onLog: io.log,
    ...(options.settingsOnly ? { tolerate: (entry) => entry.kind === 'pending' } : {}),
  })
  performance.mark('dsh:booted')
  let stopWatching: (() => Promise<void>) | undefined
  try {
    applySettings({ runtime, composition }, request, io, options.checkSettings ?? true)
    if (options.watch && request.options.watchConfig) {
      stopWatching = watchConfig({
        runtime,
        files: composition.patchFiles,
        compose: () => compose(request).tree,
        onReport: (report) => {
          if (!report.ok) return io.err(`dsh: config change rejected: ${report.error}`)
          for (const warning of report.warnings) io.err(`dsh: warning: ${warning}`)
          io.err(`dsh: reconfigured: +[${report.added.join(', ')}] -[${report.removed.join(', ')}]`)
        },
      })
      io.err(`dsh: watching ${composition.patchFiles.join(', ')} for changes`)
    }
    return await work({ runtime, composition })
  } finally {
    await stopWatching?.()
    await runtime.dispose()
  }
}
