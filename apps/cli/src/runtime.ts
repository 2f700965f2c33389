// What every command does around its work: compose the profile's tree, boot it, optionally apply
// edits of the user's patch files live (`--watch-config`), and dispose the tree however the work ends.
import { boot, type TreeRuntime, watchConfig } from '@dsh/composition'
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
}

export async function withRuntime<T>(
  request: ComposeRequest,
  io: Io,
  work: (scope: RuntimeScope) => Promise<T>,
  options: RuntimeOptions = {},
): Promise<T> {
  const composition = compose(request)
  for (const warning of composition.tree.warnings) io.err(`dsh: warning: ${warning}`)
  const runtime = await boot(composition.tree, { onLog: io.log })
  let stopWatching: (() => Promise<void>) | undefined
  try {
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
