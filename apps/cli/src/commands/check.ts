// `dsh check`: boot the profile's tree, print what is active, exit non-zero if anything is not: a row
// that did not activate, or a registered tool whose parameter schema does not compile (tools compile
// their schemas on first use, so this is where a plugin author meets that error before a model does), or a
// declared setting whose default breaks its own schema (defaults are not checked at run time either).
// With --watch-config it keeps running and applies edits of the user's patch files.

import type {} from '@dsh/agent/tools'
import { HarnessError } from '@dsh/kernel'
import type {} from '@dsh/settings'
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
      const broken: string[] = []
      for (const tool of runtime.root.get('tools')?.tools() ?? []) {
        try {
          tool.compile()
        } catch (error) {
          broken.push(HarnessError.is(error) ? error.message : String(error))
        }
      }
      if (broken.length > 0) {
        io.err(`dsh: these tools cannot be called:\n${broken.map((line) => `  ${line}`).join('\n')}`)
      }
      const defaults = runtime.root.get('settings')?.defaultProblems() ?? []
      if (defaults.length > 0) {
        io.err(`dsh: these settings have invalid defaults:\n${defaults.map((line) => `  ${line}`).join('\n')}`)
      }
      if (broken.length > 0 || defaults.length > 0) return ExitCode.BOOT
      if (!request.options.watchConfig) return ExitCode.OK
      io.err('dsh: Ctrl-C to stop')
      return io.untilSignal()
    },
    { watch: true },
  )
}
