// Server configuration: validation of row entries and `.mcp.json` files, `${VAR}` expansion, and the
// merge of both sources into one list of servers to run.
import { isAbsolute, resolve } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import { readConfigText } from '@dsh/settings'
import type { McpServerConfig } from './index.js'

/** One server ready to run: a checked config, its name and where it came from. */
export interface ResolvedServer {
  name: string
  source: string
  config: McpServerConfig
  /**
   * Configured by the user (a row of their profile), not found in the project (`.mcp.json`) or handed
   * over by a client: only then is its `readOnlyHint` believed in a read-only session.
   */
  trusted?: boolean
}

/**
 * Expands `${VAR}` and `${VAR:-default}` from `env` (the `.mcp.json` convention). An unset variable
 * without a default expands to the empty string.
 */
export function expandVars(value: string, env: NodeJS.ProcessEnv): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name: string, fallback?: string) => {
    const found = env[name]
    return found !== undefined && found !== '' ? found : (fallback ?? '')
  })
}

function stringRecord(value: unknown, where: string, problems: string[]): Record<string, string> | undefined {
  if (value === undefined) return undefined
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${where} must be an object of strings`)
    return undefined
  }
  const out: Record<string, string> = {}
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') problems.push(`${where}.${key} must be a string`)
    else out[key] = item
  }
  return out
}

/**
 * Checks one entry; returns the problems (empty when valid) and the normalised config, with `${VAR}`
 * expanded from `env` (no `env`: values are taken literally).
 */
export function checkServer(
  name: string,
  raw: unknown,
  env: NodeJS.ProcessEnv | undefined,
): { config?: McpServerConfig; problems: string[] } {
  const expand = (value: string) => (env ? expandVars(value, env) : value)
  const problems: string[] = []
  const where = `server "${name}"`
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) problems.push(`${where}: name must match ^[A-Za-z0-9_.-]{1,64}$`)
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return { problems: [...problems, `${where} must be an object`] }
  const entry = raw as Record<string, unknown>
  const type = entry.type ?? (entry.url !== undefined ? 'http' : 'stdio')
  if (type === 'http' || type === 'streamable-http') {
    if (typeof entry.url !== 'string') problems.push(`${where}.url must be a string`)
    const headers = stringRecord(entry.headers, `${where}.headers`, problems)
    if (problems.length > 0) return { problems }
    const url = expand(entry.url as string)
    try {
      const parsed = new URL(url)
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') problems.push(`${where}.url must be http(s)`)
    } catch {
      problems.push(`${where}.url is not a URL`)
    }
    const expanded = headers
      ? Object.fromEntries(Object.entries(headers).map(([key, value]) => [key, expand(value)]))
      : undefined
    return problems.length > 0
      ? { problems }
      : { config: { type: 'http', url, ...(expanded ? { headers: expanded } : {}) }, problems }
  }
  if (type !== 'stdio')
    return { problems: [...problems, `${where}.type "${String(type)}" is not supported (stdio, http)`] }
  if (typeof entry.command !== 'string' || entry.command === '') problems.push(`${where}.command must be a string`)
  if (entry.args !== undefined && (!Array.isArray(entry.args) || entry.args.some((arg) => typeof arg !== 'string'))) {
    problems.push(`${where}.args must be an array of strings`)
  }
  if (entry.cwd !== undefined && typeof entry.cwd !== 'string') problems.push(`${where}.cwd must be a string`)
  const rawEnv = stringRecord(entry.env, `${where}.env`, problems)
  if (problems.length > 0) return { problems }
  const config: McpServerConfig = {
    type: 'stdio',
    command: expand(entry.command as string),
    args: ((entry.args as string[] | undefined) ?? []).map(expand),
  }
  if (rawEnv) config.env = Object.fromEntries(Object.entries(rawEnv).map(([key, value]) => [key, expand(value)]))
  if (typeof entry.cwd === 'string') config.cwd = expand(entry.cwd)
  return { config, problems }
}

/**
 * Reads a `.mcp.json` file. A missing file is no servers. A file that does not parse, or entries that
 * are invalid, come back as `problems` (the caller reports them; a project file never stops boot).
 */
export function loadMcpJson(path: string, env: NodeJS.ProcessEnv): { servers: ResolvedServer[]; problems: string[] } {
  let text: string
  try {
    text = readConfigText(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { servers: [], problems: [] }
    return { servers: [], problems: [`${path}: ${(error as Error).message}`] }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    return { servers: [], problems: [`${path}: not JSON (${(error as Error).message})`] }
  }
  const entries = (parsed as { mcpServers?: unknown } | null)?.mcpServers
  if (!entries || typeof entries !== 'object' || Array.isArray(entries)) {
    return { servers: [], problems: [`${path}: expected { "mcpServers": { name: config } }`] }
  }
  const servers: ResolvedServer[] = []
  const problems: string[] = []
  for (const [name, raw] of Object.entries(entries)) {
    const checked = checkServer(name, raw, env)
    if (checked.config) servers.push({ name, source: path, config: checked.config })
    problems.push(...checked.problems.map((problem) => `${path}: ${problem}`))
  }
  return { servers, problems }
}

/**
 * The servers to run: row `servers` (checked strictly: any problem throws `MCP_CONFIG_INVALID`) and
 * the project's `.mcp.json` (problems returned, not thrown). A row server shadows a file server of
 * the same name.
 */
export function resolveServers(
  rowServers: Record<string, unknown> | undefined,
  mcpJson: boolean | string | undefined,
  cwd: string,
  env: NodeJS.ProcessEnv,
): { servers: ResolvedServer[]; problems: string[] } {
  if (
    rowServers !== undefined &&
    (typeof rowServers !== 'object' || rowServers === null || Array.isArray(rowServers))
  ) {
    throw new HarnessError('MCP_CONFIG_INVALID', 'mcp config: servers must be an object of name -> server', {})
  }
  const servers: ResolvedServer[] = []
  const rowProblems: string[] = []
  for (const [name, raw] of Object.entries(rowServers ?? {})) {
    const checked = checkServer(name, raw, env)
    if (checked.config) servers.push({ name, source: 'config', config: checked.config, trusted: true })
    rowProblems.push(...checked.problems)
  }
  if (rowProblems.length > 0) {
    throw new HarnessError('MCP_CONFIG_INVALID', `mcp config: ${rowProblems.join('; ')}`, { problems: rowProblems })
  }
  if (mcpJson === false) return { servers, problems: [] }
  const path =
    typeof mcpJson === 'string' ? (isAbsolute(mcpJson) ? mcpJson : resolve(cwd, mcpJson)) : resolve(cwd, '.mcp.json')
  const file = loadMcpJson(path, env)
  for (const server of file.servers) {
    if (!servers.some((existing) => existing.name === server.name)) servers.push(server)
  }
  return { servers: servers.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)), problems: file.problems }
}
