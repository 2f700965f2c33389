// `dsh check`: boot the profile's tree, print what is active, exit non-zero if anything is not.
// With --watch-config it keeps running and applies edits of the user's patch files.
import { boot, watchConfig } from '@dsh/composition'
import { type ComposeRequest, compose } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'

export async function check(request: ComposeRequest, io: Io): Promise<number> {
  const composition = compose(request)
  for (const warning of composition.tree.warnings) io.err(`dsh: warning: ${warning}`)
  const runtime = await boot(composition.tree, { onLog: io.log })
  io.out(`profile ${composition.profile}: ${runtime.rowIds.length} rows active`)
  for (const id of runtime.rowIds) io.out(`  ${id}`)
  if (!request.options.watchConfig) {
    await runtime.dispose()
    return ExitCode.OK
  }
  const files = composition.patchFiles
  io.err(`dsh: watching ${files.join(', ')}; Ctrl-C to stop`)
  const stop = watchConfig({
    runtime,
    files,
    compose: () => compose(request).tree,
    onReport: (report) => {
      if (!report.ok) return io.err(`dsh: config change rejected: ${report.error}`)
      for (const warning of report.warnings) io.err(`dsh: warning: ${warning}`)
      io.err(`dsh: reconfigured: +[${report.added.join(', ')}] -[${report.removed.join(', ')}]`)
    },
  })
  const code = await io.untilSignal()
  await stop()
  await runtime.dispose()
  return code
}
