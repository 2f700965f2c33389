// @dsh/presets: `ctx.presets`, composition at an agent's scope. A preset is a directory (shipped with
// this package, in `$DSH_HOME/presets/<name>/`, or in a project's `.dsh/presets/<name>/`) saying which
// tools the agent may use, prompt sections to add or stand in for, which skills it sees, its default
// model and reasoning effort, its permission mode, and extra rows active for that agent only. The
// session log records the preset (`preset/selected`), so resume and fork keep it; a session with turns
// of its own never changes preset.
import { readdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { ToolRestriction } from '@dsh/agent/tools'
import { dshHome, parseCacheOf } from '@dsh/composition'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import { isEvent, type Session } from '@dsh/session'
import type {} from '@dsh/settings'
import { projectTrust } from '@dsh/settings/trust'
import { composePreset } from './compose.js'
import { describePreset, type EffectiveAgentConfig } from './effective.js'
import { PRESET_FILE, PRESET_NAME, readPreset } from './format.js'

export type { EffectiveAgentConfig, Provenance, Sourced } from './effective.js'
export { formatEffective } from './effective.js'
export { PRESET_FILE, parseModel } from './format.js'

/** Where a preset directory was found. Higher origins shadow lower ones by name. */
export type PresetOrigin = 'project' | 'user' | 'extra' | 'shipped'

export interface PresetSource {
  origin: PresetOrigin
  /** The preset directory. */
  dir: string
  /** Its preset.yml. */
  file: string
}

/** A prompt section of a preset, registered for the preset's agents only. */
export interface PresetPromptSection {
  name: string
  text: string
  /** Render order among all sections (default 200: after the shipped base, before skills). */
  order: number
  /** Sections this one stands in for, for the preset's agents (e.g. `base`). */
  replaces: string[]
}

/** An extra row active for the preset's agents only (its tools and prompt sections are theirs). */
export interface PresetRow {
  id: string
  use: string
  config?: unknown
}

/** A preset as read from its directory. Absent fields fall through to the global configuration. */
export interface Preset {
  name: string
  description: string
  source: PresetSource
  /** Presets of the same name in lower-priority roots, which this one hides. */
  shadows?: PresetSource[]
  /** Tool names or globs the agent may use (`allow`) and may not (`deny`); absent: every tool. */
  tools?: ToolRestriction
  prompt: PresetPromptSection[]
  /** Skill names or globs the agent sees; absent: every skill. */
  skills?: string[]
  model?: { provider?: string; model: string }
  reasoningEffort?: string
  /** A sandbox mode or permission preset of `ctx.sandboxPolicy` (e.g. `read-only`). */
  permissionMode?: string
  rows: PresetRow[]
}

/** A preset directory that could not be used, and why (listed by `dsh presets ls`, never thrown). */
export interface PresetProblem {
  file: string
  message: string
  /** The preset is fine but sits in a folder the user has not trusted (`dsh trust`). */
  untrusted?: boolean
}

/** The durable fact: which preset a session runs with. */
export interface PresetSelected {
  name: string
  /** `request`: a client chose it; `default`: nobody did and the configured default applied. */
  by: 'request' | 'default'
  origin: PresetOrigin
}

/** A preset applied to one agent: what the driver folds into the agent; `dispose` undoes the rest. */
export interface PresetComposition {
  readonly preset: Preset
  /** The preset's model settings (provider, model, reasoning effort), for the driver to layer. */
  readonly model: Partial<LlmCallConfig>
  /** The preset's tool policy, one of the agent's tool restrictions. */
  readonly tools: ToolRestriction | undefined
  dispose(): Promise<void>
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** The session's preset (the last one wins; only logged before the session's own first turn). */
    'preset/selected': PresetSelected
  }
}

declare module 'cordis' {
  interface Context {
    presets: PresetsService
  }
}

declare module '@dsh/settings' {
  interface SettingsMap {
    /** The preset of sessions created without one (`dsh config set preset plan`). */
    preset: string
  }
}

export interface PresetsConfig {
  /** The preset of sessions that ask for none. Default `code`. */
  default?: string
  /** More preset roots (absolute, or relative to the session's cwd), above the shipped ones. */
  dirs?: string[]
  /** Read `<cwd>/.dsh/presets`. Default true. */
  project?: boolean
  /** Read `$DSH_HOME/presets`. Default true. */
  user?: boolean
  /** dsh home. Default: the launcher's home, else $DSH_HOME, else ~/.dsh. */
  home?: string
}

/** The presets shipped with this package. */
export const SHIPPED_DIR = new URL('../shipped/', import.meta.url).pathname

/** Whether a session has a turn of its own (a fork's seeded turns do not count). */
export function hasOwnTurn(session: Session): boolean {
  const events = session.events
  for (let seq = session.header.seedLength ?? 0; seq < events.length; seq++) {
    if (events[seq]?.type === 'turn/start') return true
  }
  return false
}

/** The preset a session's log records (the last `preset/selected`), if any. */
export function selectedPreset(session: Session): PresetSelected | undefined {
  const events = session.events
  for (let seq = events.length - 1; seq >= 0; seq--) {
    const event = events[seq]
    if (event && isEvent(event, 'preset/selected')) return event.data
  }
  return undefined
}

export class PresetsService extends Service {
  static readonly provide = 'presets'
  static readonly inject = ['sessions']
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly config: PresetsConfig
  readonly home: Context

  constructor(ctx: Context, config: PresetsConfig = {}) {
    super(ctx, 'presets')
    this.config = config ?? {}
    this.home = ctx
    const fallback = this.config.default
    if (fallback !== undefined && (typeof fallback !== 'string' || !PRESET_NAME.test(fallback))) {
      throw new HarnessError(
        'CONFIG_INVALID',
        `presets config: default must be a preset name matching ${PRESET_NAME}`,
        {
          default: String(fallback),
        },
      )
    }
    ctx.sessions.defineEvent('preset/selected')
    // The `preset` setting, when ctx.settings is loaded: the row's `default` is only its default.
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('preset', {
        schema: { type: 'string', pattern: PRESET_NAME.source },
        default: this.config.default ?? 'code',
        description: 'the agent preset of new sessions that name none (dsh presets ls lists them)',
        env: 'DSH_PRESET',
        allowed: 'a preset name such as code, plan, ask or minimal',
        projectSafe: true,
      })
    })
  }

  /** The preset of sessions that ask for none: the `preset` setting, else the row's `default`, else `code`. */
  defaultName(): string {
    const settings = this.home.get('settings')
    if (settings?.has('preset')) return settings.get('preset')
    return this.config.default ?? 'code'
  }

  private homeDir(): string {
    return this.config.home ?? this.home.get('launcher')?.config.home ?? dshHome()
  }

  /** The roots searched for `cwd`, highest priority first. */
  roots(cwd: string): Array<{ dir: string; origin: PresetOrigin }> {
    const home = this.homeDir()
    const roots: Array<{ dir: string; origin: PresetOrigin }> = []
    if (this.config.project !== false) roots.push({ dir: join(cwd, '.dsh', 'presets'), origin: 'project' })
    if (this.config.user !== false) roots.push({ dir: join(home, 'presets'), origin: 'user' })
    for (const dir of this.config.dirs ?? []) roots.push({ dir: resolve(cwd, dir), origin: 'extra' })
    roots.push({ dir: SHIPPED_DIR, origin: 'shipped' })
    return roots
  }

  /**
   * Every usable preset for `cwd` (default: the launcher's), sorted by name, plus the directories that
   * could not be read. Read from disk on every call: an edit applies to the next session.
   */
  async scan(cwd = this.defaultCwd()): Promise<{ presets: Preset[]; problems: PresetProblem[] }> {
    const byName = new Map<string, Preset>()
    const problems: PresetProblem[] = []
    const cache = parseCacheOf(this.homeDir())
    for (const root of this.roots(cwd)) {
      let entries: import('node:fs').Dirent[]
      try {
        entries = await readdir(root.dir, { withFileTypes: true })
      } catch {
        continue
      }
      for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        if (!entry.isDirectory() && !entry.isSymbolicLink()) continue
        const dir = join(root.dir, entry.name)
        const source: PresetSource = { origin: root.origin, dir, file: join(dir, PRESET_FILE) }
        const known = byName.get(entry.name)
        if (known) {
          known.shadows = [...(known.shadows ?? []), source]
          continue
        }
        if (!PRESET_NAME.test(entry.name)) continue
        try {
          const preset = await readPreset(entry.name, source, cache)
          if (root.origin === 'project' && !this.projectAdmits(cwd, preset)) {
            problems.push({
              file: source.file,
              message: `preset "${entry.name}" in ${source.dir} has ${preset.rows.length > 0 ? 'rows' : 'a permission mode'} and this folder is not trusted (or the preset changed since); review it, then run \`dsh trust\``,
              untrusted: true,
            })
            continue
          }
          byName.set(entry.name, preset)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
          problems.push({ file: source.file, message: (error as Error).message })
        }
      }
    }
    return { presets: [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)), problems }
  }

  /** A project preset with rows (code in this process) or a permission mode loads only in a trusted folder. */
  private projectAdmits(cwd: string, preset: Preset): boolean {
    if (preset.rows.length === 0 && preset.permissionMode === undefined) return true
    return projectTrust(this.home, this.homeDir()).admits(cwd, `.dsh/presets/${preset.name}`)
  }

  async list(cwd?: string): Promise<Preset[]> {
    return (await this.scan(cwd)).presets
  }

  /**
   * The preset `name` as `cwd` sees it. Throws `PRESET_INVALID` when its directory is broken and
   * `PRESET_NOT_FOUND` (naming the available ones) when there is none.
   */
  async get(name: string, cwd?: string): Promise<Preset> {
    const { presets, problems } = await this.scan(cwd)
    const found = presets.find((preset) => preset.name === name)
    if (found) return found
    const broken = problems.find((problem) => problem.file.endsWith(join(name, PRESET_FILE)))
    if (broken)
      throw new HarnessError(broken.untrusted ? 'PRESET_UNTRUSTED' : 'PRESET_INVALID', broken.message, {
        name,
        file: broken.file,
      })
    throw new HarnessError(
      'PRESET_NOT_FOUND',
      `no preset "${name}"; available: ${presets.map((preset) => preset.name).join(', ') || 'none'} (add one as ${join('.dsh', 'presets', name, PRESET_FILE)})`,
      { name, available: presets.map((preset) => preset.name) },
    )
  }

  /**
   * Decides the preset of `session` and records it: the logged one on resume and fork; `requested`
   * (or the default) on a session that has none yet. A request for another preset than the logged one
   * is logged when the session has no turn of its own, and refused with `PRESET_LOCKED` when it has.
   * Throws `PRESET_NOT_FOUND` / `PRESET_INVALID` before logging anything.
   */
  async select(session: Session, requested?: string): Promise<Preset> {
    const logged = selectedPreset(session)
    const cwd = session.header.cwd
    if (logged && (requested === undefined || requested === logged.name)) return this.get(logged.name, cwd)
    const preset = await this.check(session, requested)
    const name = preset.name
    session.append('preset/selected', {
      name,
      by: requested === undefined ? 'default' : 'request',
      origin: preset.source.origin,
    })
    return preset
  }

  /**
   * What `select` would do, without logging: the preset `requested` (or the default) resolves, and the
   * session may still take it. Throws `PRESET_LOCKED`, `PRESET_NOT_FOUND`, `PRESET_INVALID`.
   */
  async check(session: Session, requested?: string): Promise<Preset> {
    const logged = selectedPreset(session)
    if (logged && requested !== undefined && requested !== logged.name && hasOwnTurn(session)) {
      throw new HarnessError(
        'PRESET_LOCKED',
        `session ${session.id} runs with preset "${logged.name}" and already has turns; its preset cannot change to "${requested}". Start a new session (or fork this one) with --preset ${requested}`,
        { sessionId: session.id, preset: logged.name, requested },
      )
    }
    const name = requested ?? logged?.name
    return name === undefined ? this.getDefault(session.header.cwd) : this.get(name, session.header.cwd)
  }

  /** The default preset for `cwd`; when it is missing, the error says where the default was set. */
  private async getDefault(cwd: string): Promise<Preset> {
    const name = this.defaultName()
    try {
      return await this.get(name, cwd)
    } catch (error) {
      const settings = this.home.get('settings')
      const from = settings?.has('preset') ? settings.resolve('preset') : undefined
      if (!HarnessError.is(error, 'PRESET_NOT_FOUND') || !from?.location) throw error
      throw new HarnessError(
        'PRESET_NOT_FOUND',
        `${error.message}; "${name}" is the default preset from ${from.location} (fix it with \`dsh config set preset NAME\`)`,
        { ...error.facts, from: from.location },
      )
    }
  }

  /**
   * Applies `preset` to an agent: its prompt sections, skill filter, permission mode (on a session
   * without turns of its own) and extra rows, under a scope inside `agentCtx`. Resolves once every row
   * is active; throws `PRESET_ROW_FAILED` (after undoing what it did) when one is not.
   */
  compose(agentCtx: Context, agentId: string, session: Session, preset: Preset): Promise<PresetComposition> {
    return composePreset(this.home, agentCtx, agentId, session, preset)
  }

  /**
   * The effective configuration of an agent running `name` in `cwd`, each part with where it came
   * from: the agent's own settings (`explicit`), the preset, or the global configuration.
   */
  async describe(
    name: string,
    options: { cwd?: string; explicit?: Partial<LlmCallConfig> } = {},
  ): Promise<EffectiveAgentConfig> {
    const preset = await this.get(name, options.cwd)
    return describePreset(this.home, preset, options.explicit ?? {})
  }

  private defaultCwd(): string {
    return this.home.get('launcher')?.config.cwd ?? process.cwd()
  }
}

export default PresetsService
