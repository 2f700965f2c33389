// The project configuration that can run code, reach the network or change what dsh sends: the files
// and directories of a folder that stay inert until the user trusts that folder. AGENTS.md, plain
// preferences and skills that are only Markdown are not on this list: they load in any folder.
import { readdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { readConfigText } from '../config-file.js'

// yaml is loaded on first use, as the settings files do.
const require = createRequire(import.meta.url)

export type TrustItemKind = 'settings' | 'mcp' | 'hooks' | 'preset' | 'skill'

/** One gated piece of a folder's configuration. */
export interface TrustItem {
  kind: TrustItemKind
  /** Relative to the folder, `/`-separated (the key under which its hash is recorded). */
  path: string
  /** What it would enable, for the prompt and `dsh trust` (e.g. `MCP servers: github, db`). */
  summary: string
}

/** The gated items present in `folder`, in a stable order. */
export function projectConfigItems(folder: string): TrustItem[] {
  const items: TrustItem[] = []
  const settings = topKeys(join(folder, '.dsh', 'settings.yaml'))
  if (settings)
    items.push({ kind: 'settings', path: '.dsh/settings.yaml', summary: `settings: ${settings.join(', ')}` })
  const mcp = readJson(join(folder, '.mcp.json'))
  if (mcp !== undefined) {
    const servers = objectKeys((mcp as { mcpServers?: unknown })?.mcpServers)
    // Trusting the file allows the variables it expands: the prompt names them.
    const vars = [...new Set([...JSON.stringify(mcp).matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]))]
    const expands = vars.length > 0 ? `; expands ${vars.map((name) => `$${name}`).join(', ')}` : ''
    items.push({ kind: 'mcp', path: '.mcp.json', summary: `MCP servers: ${servers.join(', ') || 'none'}${expands}` })
  }
  for (const name of ['settings.json', 'settings.local.json']) {
    const claude = readJson(join(folder, '.claude', name))
    if (claude === undefined) continue
    const parts = Object.keys((claude ?? {}) as object).filter((key) => key === 'hooks' || key === 'permissions')
    const hooks = objectKeys((claude as { hooks?: unknown })?.hooks)
    items.push({
      kind: 'hooks',
      path: `.claude/${name}`,
      summary:
        hooks.length > 0 ? `hooks on ${hooks.join(', ')}` : `Claude settings (${parts.join(', ') || 'no hooks'})`,
    })
  }
  for (const name of subdirs(join(folder, '.dsh', 'presets'))) {
    const keys = topKeys(join(folder, '.dsh', 'presets', name, 'preset.yml')) ?? []
    const risky = keys.filter((key) => key === 'rows' || key === 'permissionMode' || key === 'modes')
    if (risky.length > 0)
      items.push({ kind: 'preset', path: `.dsh/presets/${name}`, summary: `preset ${name} (${risky.join(', ')})` })
  }
  for (const root of ['.dsh/skills', '.claude/skills']) {
    for (const name of subdirs(join(folder, root))) {
      const scripts = listFiles(join(folder, root, name)).filter((file) => !/\.md$/i.test(file))
      if (scripts.length > 0)
        items.push({ kind: 'skill', path: `${root}/${name}`, summary: `skill ${name} with ${scripts.join(', ')}` })
    }
  }
  return items
}

/** Files under `dir`, relative, sorted; symlinks are listed, not followed. */
export function listFiles(dir: string, prefix = ''): string[] {
  let entries: import('node:fs').Dirent[]
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return []
  }
  const out: string[] = []
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name
    if (entry.isDirectory()) out.push(...listFiles(join(dir, entry.name), rel))
    else out.push(rel)
  }
  return out
}

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || (entry.isSymbolicLink() && isDir(join(dir, entry.name))))
      .map((entry) => entry.name)
      .sort()
  } catch {
    return []
  }
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

function readText(path: string): string | undefined {
  try {
    return readConfigText(path)
  } catch {
    return undefined
  }
}

/** JSON content, `null` for a file that is there but unreadable as JSON, `undefined` when absent. */
function readJson(path: string): unknown {
  const text = readText(path)
  if (text === undefined) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** Top-level keys of a YAML file; `['(unparseable)']` when it does not parse, undefined when absent. */
function topKeys(path: string): string[] | undefined {
  const text = readText(path)
  if (text === undefined) return undefined
  try {
    const { parse } = require('yaml') as typeof import('yaml')
    return objectKeys(parse(text))
  } catch {
    return ['(unparseable)']
  }
}

function objectKeys(value: unknown): string[] {
  return value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : []
}
