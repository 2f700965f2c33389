// The agent presets (`@dsh/presets`) a new session can take, and an attached session's own. Needs a
// presets row; without one there are none and every session keeps the profile's agent.
import { hasOwnTurn, type PresetOrigin } from '@dsh/presets'
import type { HostAccess } from './access.js'

/** A preset as a client's picker shows it. */
export interface PresetSummary {
  name: string
  description: string
  /** Where it was found: `project`, `user`, `extra` or `shipped`. */
  origin: PresetOrigin
}

export class HostPresets {
  constructor(private readonly host: HostAccess) {}

  /** The presets a new session in `cwd` can be created with, sorted by name; empty without a presets row. */
  async list(cwd: string): Promise<PresetSummary[]> {
    const presets = this.host.ctx.get('presets')
    if (!presets) return []
    return (await presets.list(cwd)).map((preset) => ({
      name: preset.name,
      description: preset.description,
      origin: preset.source.origin,
    }))
  }

  /** The preset name new sessions get when they ask for none (undefined without a presets row). */
  defaultName(): string | undefined {
    return this.host.ctx.get('presets')?.defaultName()
  }

  /** The preset of an attached session (undefined without a presets row). */
  of(sessionId: string): string | undefined {
    return this.host.attached(sessionId)?.preset
  }

  /** Whether an attached session may no longer switch preset (it has a turn of its own). */
  locked(sessionId: string): boolean {
    const agent = this.host.attached(sessionId)
    return agent === undefined || hasOwnTurn(agent.session)
  }

  /**
   * Switches an attached session to another preset (logged as `preset/selected`). Only before the
   * session's first turn: throws `PRESET_LOCKED` after it, `SESSION_NOT_ATTACHED`, `NO_PRESETS`,
   * `PRESET_NOT_FOUND` / `PRESET_INVALID`.
   */
  async set(sessionId: string, name: string): Promise<string> {
    await this.host.agent(sessionId).setPreset(name)
    this.host.changed(sessionId)
    return name
  }
}
