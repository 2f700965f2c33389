// @dsh/orchestration/subagents-acp: a provider of `ctx.subagents` per configured ACP agent, named `acp:<name>`.
// The child is another process spoken to with the ACP SDK's client (another `dsh acp` by default;
// Claude Code or Codex through their ACP adapters by configuration). Its updates are the child's
// progress in the parent's log, its permission requests go to the parent's approval, and its last
// message is the run's report. See docs/decisions/301-acp-agents-as-subagents.md.

import type {} from '@dsh/agent/system-prompt'
import type {} from '@dsh/composition'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/world/sandbox'
import type { SubagentLaunch } from '../subagents/index.js'
import type { AgentSpec } from './child.js'
import { type AcpAgentConfig, type AcpSettings, type AcpSubagentsConfig, agentEnv, checkConfig } from './config.js'

export type { AcpAgentConfig, AcpSubagentsConfig } from './config.js'

/** The prefix of this row's provider names. */
export const PROVIDER_PREFIX = 'acp:'

/**
 * What the launch asks that an ACP agent cannot do is refused, never silently dropped: it uses its own
 * tools and model.
 */
function checkLaunch(name: string, launch: SubagentLaunch): void {
  const { request } = launch
  const unsupported = [
    ...(request.tools?.allow || request.tools?.deny?.length ? ['tools'] : []),
    ...(request.model !== undefined ? ['model'] : []),
  ]
  // A child never gets a tool its parent cannot use; an ACP agent brings its own tools, so a parent
  // whose tools are narrowed (a plan or ask preset) cannot hand work to one.
  if (request.parent.toolRestrictions.some((restriction) => restriction.allow || restriction.deny?.length)) {
    throw new HarnessError(
      'SUBAGENT_UNSUPPORTED',
      `the ACP agent "${name}" brings its own tools, and yours are narrowed (preset ${request.parent.preset ?? 'of this session'}): a subagent may never use a tool you cannot; use provider spawn`,
      { agent: name, unsupported: ['tools'] },
    )
  }
  if (unsupported.length > 0) {
    throw new HarnessError(
      'SUBAGENT_UNSUPPORTED',
      `the ACP agent "${name}" uses its own ${unsupported.join(' and ')}; leave ${unsupported.join(' and ')} out for provider ${PROVIDER_PREFIX}${name}`,
      { agent: name, unsupported },
    )
  }
}

/**
 * The parent session's permission mode and network as the ceiling of a dsh child (the base bundle's
 * sandbox-policy row reads these variables): it can narrow itself, never widen past its parent. An agent
 * that is not dsh ignores them; its permission requests still come to the parent's approval.
 */
function ceilingEnv(ctx: Context, launch: SubagentLaunch): Record<string, string> {
  const policy = ctx.get('sandboxPolicy')
  if (!policy) return {}
  const { mode, network } = policy.resolve(launch.request.parent.session.id)
  return { DSH_SANDBOX_CEILING: mode, DSH_SANDBOX_NETWORK_CEILING: network }
}

function specOf(
  ctx: Context,
  name: string,
  agent: AcpAgentConfig,
  settings: AcpSettings,
  depth: number,
  launch: SubagentLaunch,
): AgentSpec {
  const self = ctx.get('launcher')?.config.self
  const command = agent.command !== undefined ? [agent.command] : self
  if (!command || command.length === 0) {
    throw new HarnessError(
      'SUBAGENT_START_FAILED',
      `the ACP agent "${name}" has no command, and this process cannot start dsh again (no launcher row); set agents.${name}.command`,
      { agent: name },
    )
  }
  return {
    name,
    argv: [...command, ...(agent.args ?? [])],
    // The child counts itself one level deeper: its own ACP children see how deep the chain already is.
    env: { ...agentEnv(agent, process.env), ...ceilingEnv(ctx, launch), DSH_ACP_DEPTH: String(depth) },
    startTimeoutMs: settings.startTimeoutMs,
    graceMs: settings.graceMs,
  }
}

function section(settings: AcpSettings): string | undefined {
  if (settings.agents.size === 0) return undefined
  const lines = [...settings.agents].map(
    ([name, agent]) => `- ${PROVIDER_PREFIX}${name}${agent.description ? `: ${agent.description}` : ''}`,
  )
  return [
    'Other agents can take a task as subagents (task with provider set to one of these). Each runs in its own',
    'process with its own tools and model (so no tools, model or persona options); its permission requests',
    'come to your user for approval.',
    ...lines,
  ].join('\n')
}

export default {
  name: 'subagents-acp',
  inject: ['subagents'],
  apply(ctx: Context, config: AcpSubagentsConfig) {
    const settings = checkConfig(config)
    for (const [name, agent] of settings.agents) {
      ctx.subagents.register({
        name: `${PROVIDER_PREFIX}${name}`,
        start: (launch) => {
          checkLaunch(name, launch)
          // Depth across processes: this process's own ACP parents plus the child's depth here.
          const depth = settings.depth + launch.depth
          const max = ctx.subagents.settings.maxDepth
          if (depth > max) {
            throw new HarnessError(
              'SUBAGENT_DEPTH_EXCEEDED',
              `an ACP subagent here would be at depth ${depth} (this process is ${settings.depth} ACP level(s) down; the limit is ${max}); do the work yourself`,
              { depth, maxDepth: max },
            )
          }
          const spec = specOf(ctx, name, agent, settings, depth, launch)
          // The ACP SDK (and the zod schemas it builds at load, ~100 modules) loads with the first child:
          // most sessions never start one (decision 390).
          return import('./child.js').then(({ startAcpChild }) => startAcpChild(ctx, launch, spec))
        },
      })
    }
    const text = section(settings)
    if (text) {
      ctx.inject(['systemPrompt'], (inner) => {
        inner.systemPrompt.register({ name: 'acp-agents', order: 850, render: () => text })
      })
    }
  },
}
