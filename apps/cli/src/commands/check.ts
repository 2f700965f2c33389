// `dsh check`: boot the profile's tree, print what is active, exit non-zero if anything is not.
// With --watch-config it keeps running and applies edits of the user's patch files.
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { withRuntime } from '../runtime.js'

export function check(request: ComposeRequest, io: Io): Promise<number> {
  return withRuntime(
    request,
    io,
    async ({ runtime, composition }) => {
      io.out(`profile ${composition.profile}: ${runtime.rowIds.length} rows active`)
      for (const id of runtime.rowIds) io.out(`  ${id}`)
      if (!request.options.watchConfig) return ExitCode.OK
      io.err('dsh: Ctrl-C to stop')
      return io.untilSignal()
    },
    { watch: true },
  )
}
