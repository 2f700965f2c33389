// @dsh/agent-loop: the default agent driver `ctx.agentLoop`. It registers itself with `ctx.agents`;
// nothing else may import this package (extensions depend on @dsh/agent and its events).
import { randomUUID } from 'node:crypto'
import type { Agent, AgentDriver, CreateAgentOptions } from '@dsh/agent'
import type { ApprovalAsked, ApprovalDecided } from '@dsh/agent/approval'
import { type Context, Service } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import { foldMessages } from '@dsh/session'
import type {} from '@dsh/settings'
import { DailyBudget } from './daily-budget.js'
import { LoopAgent } from './driver.js'
import { checkAgentPreset, composeAgentPreset, type PresetTarget } from './preset.js'
import { runTurn } from './turn.js'

declare module '@dsh/settings' {
  interface SettingsMap {
    /** A cost budget per session in US dollars (`dsh run --max-cost` overrides it); 0: none. */
    'budget.session': number
  }
}

declare module 'cordis' {
  interface Context {
    agentLoop: AgentLoopService
  }
}

export interface AgentLoopConfig {
  /** Steps per turn before the turn ends `blocked`. Default 200. */
  maxSteps?: number
  /** A cost budget per session in US dollars (`CreateAgentOptions.maxCost`); an agent's own wins. */
  maxCost?: number
  /** Default model settings for agents that do not give their own. */
  model?: Partial<LlmCallConfig>
}

export class AgentLoopService extends Service {
  static readonly provide = 'agentLoop'
  static readonly inject = ['agents', 'sessions', 'llm', 'tools', 'systemPrompt']
  readonly config: AgentLoopConfig
  readonly agents = new Set<LoopAgent>()
  readonly daily: DailyBudget

  constructor(ctx: Context, config: AgentLoopConfig = {}) {
    super(ctx, 'agentLoop')
    this.config = config ?? {}
    const driver: AgentDriver = {
      name: 'agent-loop',
      defaultModel: this.config.model,
      create: (owner, options) => this.create(owner, options),
    }
    ctx.agents.registerDriver(driver)
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('budget.session', {
        schema: { type: 'number', minimum: 0 },
        default: 0,
        description:
          'cost budget per session in US dollars: the turn stops before the model request past it (0: no budget; dsh run --max-cost overrides)',
      })
    })
    this.daily = new DailyBudget(ctx)
    const invariants = ctx.get('invariants')
    invariants?.register('@dsh/agent-loop', 'model-visible-means-logged', () => this.checkRequests())
    // Approval questions about a session with an open turn are model-relevant facts: log them there.
    ctx.on('approval/asked', (asked) => this.logApproval('approval/asked', asked))
    ctx.on('approval/decided', (decided) => this.logApproval('approval/decided', decided))
    ctx.effect(
      () => () => {
        // Dispose every agent this driver created before the driver itself goes away.
        return Promise.all([...this.agents].map((agent) => agent.dispose())).then(() => undefined)
      },
      'agentLoop.agents',
    )
  }

  /** The `budget.session` setting, when one is set above zero. */
  private budgetSetting(): number | undefined {
    const settings = this.ctx.get('settings')
    const budget = settings?.has('budget.session') ? settings.get('budget.session') : undefined
    return typeof budget === 'number' && budget > 0 ? budget : undefined
  }

  async create(owner: Context, options: CreateAgentOptions): Promise<Agent> {
    const id = options.id ?? randomUUID()
    // The agent's own scope: a child plugin of the owner, disposed with the agent. A session it
    // creates belongs to that scope, so disposing the agent closes the session.
    const scope = owner.plugin({ name: `agent:${id}`, inject: ['sessions'], apply: () => {} })
    await scope
    const session = options.session ?? scope.ctx.sessions.create({ cwd: options.cwd })
    const root = this.ctx.root
    // The preset is composed before the agent exists: a resumed session with queued input must never
    // take a step without its preset's policy.
    const target: PresetTarget = { root, scope: scope.ctx, agentId: id, session }
    let composition: Awaited<ReturnType<typeof composeAgentPreset>>
    try {
      composition = await composeAgentPreset(target, options.preset)
    } catch (error) {
      await scope.dispose()
      throw error
    }
    const agent: LoopAgent = new LoopAgent({
      id,
      session,
      ctx: scope.ctx,
      root,
      defaultModel: this.config.model ?? {},
      model: options.model ?? {},
      maxSteps: options.maxSteps ?? this.config.maxSteps ?? 200,
      maxCost: options.maxCost ?? this.config.maxCost ?? this.budgetSetting(),
      dailyRefusal: (session) => this.daily.refusal(session),
      tools: options.tools ?? [],
      composition,
      checkPreset: (name) => checkAgentPreset(target, name),
      recompose: (name) => composeAgentPreset(target, name),
      runTurn,
      onDispose: async (disposed) => {
        this.agents.delete(disposed)
        await scope.dispose()
        root.agents.unregister(disposed)
      },
    })
    this.agents.add(agent)
    // A resumed session may hold queued input that was never claimed: it waits, shown as queued, until
    // the person sends or confirms (runQueued): what they typed before quitting may no longer apply.
    return agent
  }

  /** Appends an approval fact to the agent session it concerns, inside its open turn. */
  logApproval(type: 'approval/asked' | 'approval/decided', fact: ApprovalAsked | ApprovalDecided): void {
    for (const agent of this.agents) {
      if (agent.session.id !== fact.sessionId || agent.session.openTail().turn === undefined) continue
      agent.session.append(type, fact)
    }
  }

  /** The model-visible-means-logged invariant: each agent's last request is what its log derives. */
  checkRequests(): string[] {
    const problems: string[] = []
    for (const agent of this.agents) {
      const sent = agent.lastRequest
      if (!sent) continue
      const events = agent.session.events
      const header = events[sent.headerSeq]
      // The request as the log records it, bodies resolved through their content hashes.
      const logged = header?.type === 'request/header' ? agent.session.requestOf(sent.headerSeq) : undefined
      if (logged?.system !== sent.system) {
        problems.push(`agent ${agent.id}: the system prompt sent differs from request/header ${sent.headerSeq}`)
      }
      if (JSON.stringify(logged?.tools ?? []) !== JSON.stringify(sent.tools)) {
        problems.push(`agent ${agent.id}: the tools sent differ from request/header ${sent.headerSeq}`)
      }
      const derived = foldMessages(events.slice(0, sent.headerSeq))
      if (JSON.stringify(derived) !== JSON.stringify(sent.messages)) {
        problems.push(`agent ${agent.id}: the messages sent differ from what the log derives at ${sent.headerSeq}`)
      }
    }
    return problems
  }
}

export default AgentLoopService
