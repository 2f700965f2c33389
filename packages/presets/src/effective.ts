// The effective configuration of an agent running a preset, each part with where it came from:
// the agent's own settings, the preset (its file), or the global configuration (the profile's rows).
// `dsh presets show` prints it; the lookup order is the one agents are composed with.
import type {} from '@dsh/agent'
import type {} from '@dsh/agent/system-prompt'
import { namedExactly, permitted } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import type {} from '@dsh/world/sandbox'
import { presetModel } from './compose.js'
import type { Preset, PresetSource } from './index.js'
import type {} from './skills/index.js'

/** `agent`: the agent's own settings; `preset`: the preset's file; `global`: the profile's rows. */
export type Provenance = 'agent' | 'preset' | 'global'

export interface Sourced<T> {
  value: T
  from: Provenance
  /** The file or row that set it. */
  where: string
}

export interface EffectiveAgentConfig {
  preset: { name: string; description: string; source: PresetSource; shadows: PresetSource[] }
  model: Sourced<string>
  reasoningEffort: Sourced<string | null>
  permissionMode: Sourced<string | null>
  /** The tools the agent is offered, and the global tools the preset hides. */
  tools: Sourced<{ visible: string[]; hidden: string[]; allow: string[] | null; deny: string[] }>
  /** Every prompt section the agent's prompt is built from, in render order. */
  prompt: Array<{ name: string; from: Provenance; where: string; replacedBy?: string }>
  skills: Sourced<{ visible: string[]; filter: string[] | null }>
  rows: Sourced<Array<{ id: string; use: string }>>
}

export async function describePreset(
  home: Context,
  preset: Preset,
  explicit: Partial<LlmCallConfig>,
): Promise<EffectiveAgentConfig> {
  const file = preset.source.file
  const global = home.get('agents')?.defaultModel() ?? {}
  const fromPreset = presetModel(preset)
  const pick = <K extends keyof LlmCallConfig>(key: K) => {
    if (explicit[key] !== undefined) return { value: explicit[key], from: 'agent' as const, where: 'agent settings' }
    if (fromPreset[key] !== undefined) return { value: fromPreset[key], from: 'preset' as const, where: file }
    return { value: global[key], from: 'global' as const, where: 'agent-loop row (profile)' }
  }
  const provider = pick('provider')
  const modelName = pick('model')
  let model = `${provider.value ?? '(default provider)'}:${modelName.value ?? '(adapter default)'}`
  try {
    const llm = home.get('llm')
    if (llm) {
      const resolved = llm.resolveCall({
        ...(provider.value ? { provider: provider.value } : {}),
        ...(modelName.value ? { model: modelName.value } : {}),
      })
      model = `${resolved.provider}:${resolved.model}`
    }
  } catch {}
  const modelFrom = modelName.from === 'global' ? provider : modelName
  const effort = pick('reasoningEffort')

  const policy = home.get('sandboxPolicy')
  const permissionMode: Sourced<string | null> = preset.permissionMode
    ? { value: preset.permissionMode, from: 'preset', where: file }
    : { value: policy ? policy.mode() : null, from: 'global', where: 'sandbox-policy row (profile)' }

  const registered = home.get('tools')?.tools() ?? []
  const all = registered.map((tool) => tool.name)
  const policyOf = preset.tools ?? {}
  const optIn = new Set(registered.filter((tool) => tool.optIn).map((tool) => tool.name))
  const visible = all.filter(
    (name) => permitted(name, policyOf) && (!optIn.has(name) || namedExactly(name, [policyOf])),
  )
  const tools: EffectiveAgentConfig['tools'] = {
    value: {
      visible,
      hidden: all.filter((name) => !visible.includes(name)),
      allow: preset.tools?.allow ? [...preset.tools.allow] : null,
      deny: [...(preset.tools?.deny ?? [])],
    },
    from: preset.tools ? 'preset' : 'global',
    where: preset.tools ? file : 'tool rows (profile)',
  }

  const sections = [...(home.get('systemPrompt')?.sections.values() ?? [])].filter(
    (section) => section.agentId === undefined,
  )
  const prompt: EffectiveAgentConfig['prompt'] = []
  const ordered = [
    ...sections.map((section) => ({ name: section.name, order: section.order ?? 100, from: 'global' as const })),
    ...preset.prompt.map((section) => ({ name: section.name, order: section.order, from: 'preset' as const })),
  ].sort((a, b) => a.order - b.order || a.name.localeCompare(b.name))
  for (const section of ordered) {
    const replacer = preset.prompt.find((own) => own.replaces.includes(section.name))
    prompt.push({
      name: section.name,
      from: section.from,
      where: section.from === 'preset' ? file : 'system prompt rows (profile)',
      ...(section.from === 'global' && replacer ? { replacedBy: replacer.name } : {}),
    })
  }

  const skillNames = (await home.get('skills')?.list())?.map((skill) => skill.name) ?? []
  const skills: EffectiveAgentConfig['skills'] = preset.skills
    ? {
        value: {
          visible: skillNames.filter((name) => permitted(name, { allow: preset.skills })),
          filter: preset.skills,
        },
        from: 'preset',
        where: file,
      }
    : { value: { visible: skillNames, filter: null }, from: 'global', where: 'skills row (profile)' }

  return {
    preset: {
      name: preset.name,
      description: preset.description,
      source: preset.source,
      shadows: preset.shadows ?? [],
    },
    model: { value: model, from: modelFrom.from, where: modelFrom.where },
    reasoningEffort: { value: effort.value ?? null, from: effort.from, where: effort.where },
    permissionMode,
    tools,
    prompt,
    skills,
    rows: {
      value: preset.rows.map((row) => ({ id: row.id, use: row.use })),
      from: preset.rows.length ? 'preset' : 'global',
      where: preset.rows.length ? file : 'none',
    },
  }
}

/** The text `dsh presets show` prints: one line per part, each with a `# from` comment. */
export function formatEffective(config: EffectiveAgentConfig): string {
  const note = (from: Provenance, where: string) => `  # ${from}: ${where}`
  const source = config.preset.source
  const lines = [
    `preset: ${config.preset.name}  # ${source.origin}: ${source.dir}`,
    ...config.preset.shadows.map((hidden) => `  # hides ${hidden.origin}: ${hidden.dir}`),
  ]
  if (config.preset.description) lines.push(`description: ${config.preset.description}`)
  lines.push(`model: ${config.model.value}${note(config.model.from, config.model.where)}`)
  lines.push(
    `reasoningEffort: ${config.reasoningEffort.value ?? '(adapter default)'}${note(config.reasoningEffort.from, config.reasoningEffort.where)}`,
  )
  lines.push(
    `permissionMode: ${config.permissionMode.value ?? '(no sandbox policy)'}${note(config.permissionMode.from, config.permissionMode.where)}`,
  )
  const tools = config.tools.value
  const policy = [
    tools.allow ? `allow ${tools.allow.join(', ')}` : '',
    tools.deny.length ? `deny ${tools.deny.join(', ')}` : '',
  ].filter(Boolean)
  lines.push(`tools:${note(config.tools.from, config.tools.where)}${policy.length ? ` (${policy.join('; ')})` : ''}`)
  lines.push(`  offered: ${tools.visible.join(', ') || '(none)'}`)
  if (tools.hidden.length) lines.push(`  hidden: ${tools.hidden.join(', ')}`)
  lines.push('prompt sections (render order):')
  for (const section of config.prompt) {
    const replaced = section.replacedBy ? ` (replaced by ${section.replacedBy})` : ''
    lines.push(`  - ${section.name}${replaced}${note(section.from, section.where)}`)
  }
  const skills = config.skills.value
  lines.push(
    `skills: ${skills.visible.join(', ') || '(none)'}${note(config.skills.from, config.skills.where)}${skills.filter ? ` (filter ${skills.filter.join(', ')})` : ''}`,
  )
  const rows = config.rows.value
  lines.push(
    `rows: ${rows.length ? rows.map((row) => `${row.id} (${row.use})`).join(', ') : '(none)'}${rows.length ? note(config.rows.from, config.rows.where) : ''}`,
  )
  return lines.join('\n')
}
