// An agent's preset composition as the driver sees it: which preset the session records, and what
// the preset adds to the agent (model settings, a tool restriction, and registrations under the
// agent's scope that `dispose` removes). Without a presets row an agent runs with the global
// configuration, and asking for a preset is an error rather than silently ignored.
import { type Context, HarnessError } from '@dsh/kernel'
import type { PresetComposition } from '@dsh/presets'
import type { Session } from '@dsh/session'

export interface PresetTarget {
  root: Context
  /** The agent's own scope: the composition lives inside it. */
  scope: Context
  agentId: string
  session: Session
}

/** Selects (and logs) the session's preset and composes it; `undefined` without a presets row. */
export async function composeAgentPreset(
  target: PresetTarget,
  requested: string | undefined,
): Promise<PresetComposition | undefined> {
  const presets = target.root.get('presets')
  if (!presets) {
    if (requested === undefined) return undefined
    throw new HarnessError(
      'NO_PRESETS',
      `preset "${requested}" was asked for, but this profile has no presets row (add "@dsh/presets" to it)`,
      { requested },
    )
  }
  const preset = await presets.select(target.session, requested)
  return presets.compose(target.scope, target.agentId, target.session, preset)
}

/** Whether the session may switch to `name` (see `PresetsService.check`); throws why not. */
export async function checkAgentPreset(target: PresetTarget, name: string): Promise<void> {
  const presets = target.root.get('presets')
  if (!presets) {
    throw new HarnessError('NO_PRESETS', `this profile has no presets row; preset "${name}" cannot be chosen`, {
      requested: name,
    })
  }
  await presets.check(target.session, name)
}
