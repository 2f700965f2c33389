// The preset directory format: `<name>/preset.yml` (what the agent gets) plus the markdown files its
// prompt entries name. Every problem is one PRESET_INVALID error naming the file, the key and what is
// allowed there.
import { createRequire } from 'node:module'
import { join, relative, sep } from 'node:path'
import { cachedParse, configTags, type ParseCache } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel'
import { readConfigText } from '@dsh/settings'
import type { Preset, PresetPromptSection, PresetRow, PresetSource } from './index.js'

const require = createRequire(import.meta.url)
const loadYaml = (): typeof import('yaml') => require('yaml')

export const PRESET_FILE = 'preset.yml'
export const PRESET_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/
const TOP_KEYS = [
  'description',
  'tools',
  'prompt',
  'skills',
  'model',
  'reasoningEffort',
  'permissionMode',
  'rows',
] as const
const PROMPT_KEYS = ['name', 'file', 'text', 'order', 'replaces']
const ROW_KEYS = ['id', 'use', 'config']
const ROW_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

class Problems {
  readonly list: string[] = []
  constructor(readonly file: string) {}
  add(key: string, message: string): void {
    this.list.push(`${key}: ${message}`)
  }
  throwIfAny(): void {
    if (this.list.length === 0) return
    throw new HarnessError(
      'PRESET_INVALID',
      `${this.file}: ${this.list.length === 1 ? this.list[0] : `\n  - ${this.list.join('\n  - ')}`}`,
      { file: this.file, problems: this.list },
    )
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function unknownKeys(value: Record<string, unknown>, allowed: readonly string[], where: string, problems: Problems) {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) problems.add(`${where}${key}`, `unknown key; allowed: ${allowed.join(', ')}`)
  }
}

function stringList(value: unknown, key: string, problems: Problems): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item === '')) {
    problems.add(key, 'must be a list of names or globs (strings with * and ?)')
    return undefined
  }
  return value as string[]
}

/** `provider:model`, or a bare model of the default provider. */
export function parseModel(value: string): { provider?: string; model: string } {
  const colon = value.indexOf(':')
  return colon > 0 ? { provider: value.slice(0, colon), model: value.slice(colon + 1) } : { model: value }
}

/**
 * Reads one preset directory. `name` is the directory's name; `source` where it was found. Throws
 * `PRESET_INVALID` (YAML, keys, values, a prompt file outside the directory or missing).
 */
export async function readPreset(name: string, source: PresetSource, cache?: ParseCache): Promise<Preset> {
  const problems = new Problems(source.file)
  // Bounded, regular files only: a FIFO named preset.yml would hang the scan (and dsh's start).
  const text = readConfigText(source.file)
  // An unchanged preset.yml is read from the parse cache, without the YAML library (decision 391).
  const data: unknown =
    cachedParse(cache, 'preset', text, () => {
      const doc = loadYaml().parseDocument(text, { customTags: configTags, prettyErrors: true })
      if (doc.errors.length > 0) problems.add('(file)', `not valid YAML: ${doc.errors[0]?.message.split('\n')[0]}`)
      problems.throwIfAny()
      return doc.toJS()
    }) ?? {}
  if (!isRecord(data)) {
    problems.add('(file)', 'must be a mapping of preset keys')
    problems.throwIfAny()
  }
  const raw = data as Record<string, unknown>
  unknownKeys(raw, TOP_KEYS, '', problems)
  const preset: Preset = { name, description: '', source, prompt: [], rows: [] }

  if (raw.description !== undefined) {
    if (typeof raw.description === 'string') preset.description = raw.description.trim().replace(/\s+/g, ' ')
    else problems.add('description', 'must be a string')
  }
  if (raw.tools !== undefined) {
    if (!isRecord(raw.tools)) problems.add('tools', 'must be a mapping with allow and/or deny lists')
    else {
      unknownKeys(raw.tools, ['allow', 'deny'], 'tools.', problems)
      const allow = stringList(raw.tools.allow, 'tools.allow', problems)
      const deny = stringList(raw.tools.deny, 'tools.deny', problems)
      preset.tools = { ...(allow ? { allow } : {}), ...(deny ? { deny } : {}) }
    }
  }
  const skills = stringList(raw.skills, 'skills', problems)
  if (skills) preset.skills = skills
  if (raw.model !== undefined) {
    if (typeof raw.model === 'string' && raw.model.trim()) preset.model = parseModel(raw.model.trim())
    else problems.add('model', 'must be "provider:model" (or a model name of the default provider)')
  }
  for (const key of ['reasoningEffort', 'permissionMode'] as const) {
    if (raw[key] === undefined) continue
    if (typeof raw[key] === 'string' && raw[key]) preset[key] = raw[key] as string
    else problems.add(key, 'must be a non-empty string')
  }
  if (raw.prompt !== undefined) {
    if (!Array.isArray(raw.prompt)) problems.add('prompt', 'must be a list of sections ({ file | text, ... })')
    else {
      for (const [index, entry] of raw.prompt.entries()) {
        const section = await promptSection(entry, `prompt[${index}]`, source.dir, problems)
        if (section) preset.prompt.push(section)
      }
    }
  }
  if (raw.rows !== undefined) {
    if (!Array.isArray(raw.rows)) problems.add('rows', 'must be a list of rows ({ id, use, config? })')
    else for (const [index, entry] of raw.rows.entries()) pushRow(entry, `rows[${index}]`, preset.rows, problems)
  }
  problems.throwIfAny()
  return preset
}

async function promptSection(
  entry: unknown,
  key: string,
  dir: string,
  problems: Problems,
): Promise<PresetPromptSection | undefined> {
  if (!isRecord(entry)) {
    problems.add(key, 'must be a mapping with file or text')
    return undefined
  }
  unknownKeys(entry, PROMPT_KEYS, `${key}.`, problems)
  const { file, text, order, replaces } = entry
  if ((file === undefined) === (text === undefined)) {
    problems.add(key, 'give exactly one of file (a markdown file in the preset directory) or text')
    return undefined
  }
  if (order !== undefined && !Number.isInteger(order)) problems.add(`${key}.order`, 'must be an integer')
  const replaced = stringList(replaces, `${key}.replaces`, problems) ?? []
  let body: string
  let name: string
  if (typeof file === 'string') {
    const path = join(dir, file)
    const inside = relative(dir, path)
    if (inside.startsWith('..') || inside.startsWith(sep)) {
      problems.add(`${key}.file`, 'must be a path inside the preset directory')
      return undefined
    }
    try {
      body = readConfigText(path)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      problems.add(`${key}.file`, code === 'ENOENT' ? `cannot read ${path}` : (error as Error).message)
      return undefined
    }
    name = typeof entry.name === 'string' ? entry.name : file.replace(/\.md$/, '')
  } else if (typeof text === 'string') {
    body = text
    name = typeof entry.name === 'string' ? entry.name : `text-${key}`
  } else {
    problems.add(key, 'file and text must be strings')
    return undefined
  }
  return { name, text: body.trim(), order: (order as number | undefined) ?? 200, replaces: replaced }
}

function pushRow(entry: unknown, key: string, rows: PresetRow[], problems: Problems): void {
  if (!isRecord(entry)) {
    problems.add(key, 'must be a mapping { id, use, config? }')
    return
  }
  unknownKeys(entry, ROW_KEYS, `${key}.`, problems)
  if (typeof entry.id !== 'string' || !ROW_ID.test(entry.id)) problems.add(`${key}.id`, `must match ${ROW_ID}`)
  else if (rows.some((row) => row.id === entry.id)) problems.add(`${key}.id`, `duplicate row id "${entry.id}"`)
  if (typeof entry.use !== 'string' || !entry.use) problems.add(`${key}.use`, 'must be a module specifier')
  if (typeof entry.id === 'string' && typeof entry.use === 'string') {
    rows.push({ id: entry.id, use: entry.use, ...(entry.config !== undefined ? { config: entry.config } : {}) })
  }
}
