// @dsh/agent/system-prompt: `ctx.systemPrompt`, the registry of named, ordered prompt sections and prompt
// variables. The loop renders it per request and records the result in `request/header`, so what the
// model was told is always in the log. `dynamic` sections become durable user-role context snapshots.
import { agentScopeOf, type Context, HarnessError, Service } from '@dsh/kernel'

declare module 'cordis' {
  interface Context {
    systemPrompt: SystemPromptService
  }
}

/** What sections and variables can read when rendering. */
export interface PromptScope {
  cwd: string
  sessionId?: string
  agentId?: string
  provider?: string
  model?: string
}

/**
 * `section`: part of the system prompt, ordered by `order` then name. `complete`: replaces the whole
 * system prompt (at most one may be active). `dynamic`: context that changes during a session (the
 * loop logs it as a user-role snapshot whenever its text changes, instead of putting it in the prompt).
 */
export type SectionKind = 'section' | 'complete' | 'dynamic'

export interface PromptSection {
  name: string
  kind?: SectionKind
  /** Lower renders first. Default 100. */
  order?: number
  /**
   * Only for this agent (per-agent sections); all agents when absent. A section registered from an
   * agent's composition context (`AGENT_SCOPE`, a preset's rows) defaults to that agent.
   */
  agentId?: string
  /**
   * Names of sections this one stands in for: while it applies (for its agent), those are left out.
   * A preset replaces the shipped `base` section for its agents this way.
   */
  replaces?: readonly string[]
  /** Text with `{{variable}}` placeholders, or undefined/empty to contribute nothing this time. */
  render(scope: PromptScope): string | undefined | Promise<string | undefined>
}

export type PromptVariable = string | ((scope: PromptScope) => string)

export interface RenderedPrompt {
  system: string
  /** The rendered dynamic sections, joined; empty when there are none. */
  dynamic: string
}

const BUILTIN_VARIABLES: Record<string, (scope: PromptScope) => string> = {
  cwd: (scope) => scope.cwd,
  date: () => new Date().toISOString().slice(0, 10),
  platform: () => process.platform,
  model: (scope) => (scope.provider && scope.model ? `${scope.provider}:${scope.model}` : (scope.model ?? 'unknown')),
}

export class SystemPromptService extends Service {
  static readonly provide = 'systemPrompt'
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly sections = new Map<string, PromptSection>()
  readonly variables = new Map<string, PromptVariable>()
  /** The Cordis fiber that registered each section (a replay names the composition row behind it). */
  readonly owners = new WeakMap<PromptSection, unknown>()

  constructor(ctx: Context) {
    super(ctx, 'systemPrompt')
  }

  /** Registers a section for the caller's lifetime. Throws `DUPLICATE_PROMPT_SECTION`. */
  register(section: PromptSection): () => void {
    const scoped = agentScopeOf(this.ctx)
    if (section.agentId === undefined && scoped !== undefined) section = { ...section, agentId: scoped }
    return this.ctx.effect(() => {
      if (this.sections.has(section.name)) {
        throw new HarnessError('DUPLICATE_PROMPT_SECTION', `prompt section "${section.name}" is already registered`, {
          name: section.name,
        })
      }
      this.sections.set(section.name, section)
      this.owners.set(section, this.ctx.fiber)
      return () => {
        if (this.sections.get(section.name) === section) this.sections.delete(section.name)
      }
    }, `systemPrompt.register(${section.name})`)
  }

  /** Registers a `{{name}}` variable for the caller's lifetime. Throws `DUPLICATE_PROMPT_VARIABLE`. */
  variable(name: string, value: PromptVariable): () => void {
    return this.ctx.effect(() => {
      if (this.variables.has(name) || name in BUILTIN_VARIABLES) {
        throw new HarnessError('DUPLICATE_PROMPT_VARIABLE', `prompt variable "${name}" is already defined`, { name })
      }
      this.variables.set(name, value)
      return () => {
        this.variables.delete(name)
      }
    }, `systemPrompt.variable(${name})`)
  }

  /**
   * Renders the prompt for `scope`. Throws `PROMPT_COMPLETE_CONFLICT` when two `complete` sections
   * apply, naming both.
   */
  async render(scope: PromptScope): Promise<RenderedPrompt> {
    const { system, dynamic } = await this.renderedParts(scope)
    return {
      system: system.map((part) => part.text).join('\n\n'),
      dynamic: dynamic.map((part) => part.text).join('\n\n'),
    }
  }

  /**
   * The system prompt's sections as `render` joins them, each with its name and the fiber that
   * registered it (the composition runtime tells which row that fiber belongs to).
   */
  async parts(scope: PromptScope): Promise<Array<{ name: string; text: string; owner: unknown }>> {
    return (await this.renderedParts(scope)).system
  }

  private async renderedParts(scope: PromptScope) {
    const matching = [...this.sections.values()].filter(
      (section) => section.agentId === undefined || section.agentId === scope.agentId,
    )
    const replaced = new Set(matching.flatMap((section) => section.replaces ?? []))
    const applicable = matching
      .filter((section) => !replaced.has(section.name))
      .sort((a, b) => (a.order ?? 100) - (b.order ?? 100) || a.name.localeCompare(b.name))
    const complete = applicable.filter((section) => section.kind === 'complete')
    if (complete.length > 1) {
      throw new HarnessError(
        'PROMPT_COMPLETE_CONFLICT',
        `two "complete" prompt sections are active (${complete.map((s) => s.name).join(', ')}); disable one`,
        { sections: complete.map((s) => s.name) },
      )
    }
    const renderAll = async (sections: PromptSection[]) => {
      const parts: Array<{ name: string; text: string; owner: unknown }> = []
      for (const section of sections) {
        const text = (await section.render(scope))?.trim()
        if (text)
          parts.push({ name: section.name, text: this.substitute(text, scope), owner: this.owners.get(section) })
      }
      return parts
    }
    const system = await renderAll(
      complete.length ? complete : applicable.filter((s) => (s.kind ?? 'section') === 'section'),
    )
    const dynamic = await renderAll(applicable.filter((s) => s.kind === 'dynamic'))
    return { system, dynamic }
  }

  /** Replaces `{{name}}` with variable values; unknown names are left as written. */
  substitute(text: string, scope: PromptScope): string {
    return text.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (whole, name: string) => {
      const value = this.variables.get(name) ?? BUILTIN_VARIABLES[name]
      if (value === undefined) return whole
      return typeof value === 'function' ? value(scope) : value
    })
  }
}

export interface BasePromptConfig {
  /** Replaces the shipped base prompt text. */
  text?: string
}

export default SystemPromptService
