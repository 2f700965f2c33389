// `dsh presets ls|show`: the agent presets the booted profile's `ctx.presets` finds for this directory,
// and one preset's effective agent configuration with where each part comes from (agent, preset file,
// or the profile's rows), like --dump-config does for the plugin tree.
import { resolve } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import { formatEffective } from '@dsh/presets'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { type RuntimeScope, withRuntime } from '../runtime.js'
import { modelOf } from './run.js'

export interface PresetsOptions {
  json?: boolean
  cwd?: string
  model?: string
  provider?: string
}

function service({ runtime }: RuntimeScope) {
  const presets = runtime.root.get('presets')
  if (!presets) throw new HarnessError('CONFIG_NO_PRESETS', 'the profile has no presets row (@dsh/presets)', {})
  return presets
}

export async function presetsList(request: ComposeRequest, options: PresetsOptions, io: Io): Promise<number> {
  return withRuntime(request, io, async (scope) => {
    const presets = service(scope)
    const { presets: found, problems } = await presets.scan(resolve(options.cwd ?? process.cwd()))
    const fallback = presets.defaultName()
    if (options.json) {
      const rows = found.map((preset) => ({
        name: preset.name,
        description: preset.description,
        origin: preset.source.origin,
        dir: preset.source.dir,
        default: preset.name === fallback,
      }))
      io.out(JSON.stringify({ presets: rows, problems }, null, 2))
      return ExitCode.OK
    }
    const width = Math.max(4, ...found.map((preset) => preset.name.length + (preset.name === fallback ? 2 : 0)))
    for (const preset of found) {
      const name = preset.name === fallback ? `${preset.name} *` : preset.name
      io.out(`${name.padEnd(width)}  ${preset.source.origin.padEnd(8)}  ${preset.description}`)
    }
    io.out(`(* the default; show one with: dsh presets show NAME)`)
    for (const problem of problems) io.err(`dsh: warning: preset skipped: ${problem.message}`)
    return ExitCode.OK
  })
}

export async function presetsShow(
  request: ComposeRequest,
  name: string,
  options: PresetsOptions,
  io: Io,
): Promise<number> {
  return withRuntime(request, io, async (scope) => {
    const described = await service(scope).describe(name, {
      cwd: resolve(options.cwd ?? process.cwd()),
      explicit: modelOf(options),
    })
    io.out(options.json ? JSON.stringify(described, null, 2) : formatEffective(described))
    return ExitCode.OK
  })
}
