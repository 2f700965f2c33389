// The row's configuration: which ACP agents may be children, how each is started, and where this
// process stands in a chain of ACP children (so a dsh that delegates to a dsh cannot recurse forever).
import { HarnessError } from '@dsh/kernel'

export interface AcpAgentConfig {
  /** One line for the model (what this agent is good at). */
  description?: string
  /** The executable. Default: this dsh again (the launcher's `self`), so `args: [acp]` is `dsh acp`. */
  command?: string
  args?: string[]
  /** Variables set for the agent (`!env NAME` in a patch reads one from this process). */
  env?: Record<string, string>
  /**
   * Variables of this process passed on: `true` for all, or a list of names. Default: only PATH, HOME,
   * USER, LOGNAME, SHELL, TERM, LANG, LC_ALL, TMPDIR, TZ (an agent gets no keys unless given them).
   */
  inheritEnv?: boolean | string[]
}

export interface AcpSubagentsConfig {
  /** Agents by name; the model reaches one as `task` provider `acp:<name>`. */
  agents?: Record<string, AcpAgentConfig>
  /** How many ACP parents this process has (the base bundle reads `DSH_ACP_DEPTH`, which a parent sets). */
  depth?: number | string
  /** Bound of starting an agent (initialize and session/new). Default 60000 ms. */
  startTimeoutMs?: number
  /** After closing the agent's stdin, how long it may take to exit before its process group is killed. Default 5000 ms. */
  graceMs?: number
}

export interface AcpSettings {
  agents: Map<string, AcpAgentConfig>
  depth: number
  startTimeoutMs: number
  graceMs: number
}

const NAME = /^[a-z][a-z0-9_-]{0,39}$/
const strings = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === 'string')
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function checkAgent(name: string, agent: unknown, problems: string[]): void {
  const where = `agents.${name}`
  if (!NAME.test(name)) problems.push(`${where}: an agent name must match ${NAME} (e.g. "claude-code")`)
  if (!isRecord(agent)) {
    problems.push(`${where} must be an object, e.g. { command: npx, args: [...] }`)
    return
  }
  const known = ['description', 'command', 'args', 'env', 'inheritEnv']
  for (const key of Object.keys(agent)) if (!known.includes(key)) problems.push(`${where}: unknown key "${key}"`)
  for (const key of ['description', 'command'] as const) {
    if (agent[key] !== undefined && (typeof agent[key] !== 'string' || agent[key] === '')) {
      problems.push(`${where}.${key} must be a non-empty string`)
    }
  }
  if (agent.args !== undefined && !strings(agent.args)) problems.push(`${where}.args must be a list of strings`)
  if (
    agent.env !== undefined &&
    !(isRecord(agent.env) && Object.values(agent.env).every((v) => typeof v === 'string'))
  ) {
    problems.push(`${where}.env must map names to strings`)
  }
  const inherit = agent.inheritEnv
  if (inherit !== undefined && typeof inherit !== 'boolean' && !strings(inherit)) {
    problems.push(`${where}.inheritEnv must be true, false or a list of variable names`)
  }
}

/** Throws `CONFIG_INVALID` naming every problem. */
export function checkConfig(config: AcpSubagentsConfig | undefined): AcpSettings {
  const raw = config ?? {}
  const problems: string[] = []
  const agents = raw.agents ?? {}
  if (!isRecord(agents)) problems.push('agents must map names to agent configs')
  else for (const [name, agent] of Object.entries(agents)) checkAgent(name, agent, problems)
  const depth = typeof raw.depth === 'string' ? Number(raw.depth || 0) : (raw.depth ?? 0)
  if (!Number.isInteger(depth) || depth < 0) problems.push(`depth must be an integer >= 0 (got ${String(raw.depth)})`)
  const startTimeoutMs = raw.startTimeoutMs ?? 60_000
  const graceMs = raw.graceMs ?? 5000
  if (!Number.isInteger(startTimeoutMs) || startTimeoutMs < 1) problems.push('startTimeoutMs must be an integer >= 1')
  if (!Number.isInteger(graceMs) || graceMs < 0) problems.push('graceMs must be an integer >= 0')
  if (problems.length > 0) {
    throw new HarnessError('CONFIG_INVALID', `subagents-acp config: ${problems.join('; ')}`, { problems })
  }
  return {
    agents: new Map(Object.entries(agents as Record<string, AcpAgentConfig>)),
    depth,
    startTimeoutMs,
    graceMs,
  }
}

const BASE_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ']

/** The agent's environment: the base names (or what `inheritEnv` says), then its own `env`. */
export function agentEnv(
  agent: AcpAgentConfig,
  from: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const names = agent.inheritEnv === true ? Object.keys(from) : [...BASE_ENV, ...(agent.inheritEnv || [])]
  const env: Record<string, string> = {}
  for (const name of names) {
    const value = from[name]
    if (value !== undefined) env[name] = value
  }
  return { ...env, ...(agent.env ?? {}) }
}
