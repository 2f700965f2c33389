// @dsh/orchestration/subagents: `ctx.subagents`, a named registry of subagent providers, and the lifecycle every
// provider shares: depth limit, durable `subagent/*` events in the parent's log, cancellation through
// the caller's signal, ownership (the caller disposes what `start()` returned), and the fold that
// reads children's outcomes back from the log (with honest closers after a crash).
import { randomUUID } from 'node:crypto'
import { realpathSync } from 'node:fs'
import { join, relative } from 'node:path'
import type { Agent } from '@dsh/agent'
import type { ToolRestriction } from '@dsh/agent/tools'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import { type AnySessionEvent, eventData, type Session } from '@dsh/session'
import type { WorktreeRecord, Worktrees } from '@dsh/world/worktrees'
import { foldSubagents, SUBAGENT_EVENT_TYPES } from './fold.js'
import { LiveSubagent } from './handle.js'
import type {
  SubagentChild,
  SubagentFinishedData,
  SubagentHandle,
  SubagentProgress,
  SubagentProvider,
  SubagentRecord,
  SubagentReport,
  SubagentRequest,
  SubagentStartedData,
  SubagentWorktree,
} from './types.js'

export { foldSubagents, outcomeOf } from './fold.js'

/** What the model reads about a worktree child's work: where it is and how the user merges it. */
export function worktreeNote(worktree: SubagentWorktree): string {
  if (worktree.removed) return `[worktree ${worktree.name}: the subagent changed no file; removed]`
  const count = worktree.files.length
  const files = count > 8 ? [...worktree.files.slice(0, 8), '...'] : worktree.files
  return `[worktree: its changes are on branch ${worktree.branch} (${count} file${count === 1 ? '' : 's'}: ${files.join(', ')}), not in your workspace; the user merges them with: dsh worktrees merge ${worktree.name}]`
}

export type {
  ChildRunResult,
  SubagentChild,
  SubagentFinishedData,
  SubagentHandle,
  SubagentLaunch,
  SubagentMode,
  SubagentOutcome,
  SubagentProgress,
  SubagentProvider,
  SubagentRecord,
  SubagentReport,
  SubagentRequest,
  SubagentStartedData,
  SubagentStatus,
  SubagentWorktree,
} from './types.js'

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A child started (the durable descriptor: provider, mode, child session, depth, policy). */
    'subagent/started': SubagentStartedData
    /** A follow-up message queued for a continuable child (run `run`). */
    'subagent/message': { subagentId: string; run: number; text: string }
    /** A run of a child ended. */
    'subagent/finished': SubagentFinishedData
    /** The child was released (disposed, or found without a live owner on resume); `final`: on purpose. */
    'subagent/closed': { subagentId: string; reason?: string; synthetic?: true; final?: true }
    /** A closed continuable child was brought back from its durable session. */
    'subagent/reopened': { subagentId: string; childSession: string }
    /** What a child outside this process did during run `run` (see `SubagentLaunch.progress`). */
    'subagent/progress': { subagentId: string; run: number } & SubagentProgress
  }
}

declare module 'cordis' {
  interface Context {
    subagents: SubagentsService
  }
  interface Events {
    'subagent/started'(handle: SubagentHandle): void
    'subagent/finished'(report: SubagentReport): void
  }
}

export { SUBAGENT_EVENT_TYPES } from './fold.js'

export interface SubagentsConfig {
  /** Children of children... up to this depth (a root agent is depth 0). Default 2. */
  maxDepth?: number
  /** Provider used when a request names none. Default `spawn`. */
  defaultProvider?: string
  /** Default persona of children. */
  persona?: string
  /**
   * Tools no child may use, whatever the request says. Default `['ask_user', 'exit_plan_mode']`: a child
   * cannot reach a person (both would ask one).
   */
  deny?: string[]
  /** Bound of a report's text. Default 16000 characters. */
  maxReportChars?: number
}

export const DEFAULT_PERSONA = [
  'You are a subagent: another agent delegated one task to you. Work on it with the tools you have.',
  'Nobody can answer questions here: when something is unclear, decide, and say what you assumed.',
  'End with a final report as plain text: what you did, what you found, and anything left undone.',
].join('\n')

function checkConfig(config: SubagentsConfig): Required<SubagentsConfig> {
  const maxDepth = config.maxDepth ?? 2
  const maxReportChars = config.maxReportChars ?? 16_000
  const problems: string[] = []
  if (!Number.isInteger(maxDepth) || maxDepth < 0) problems.push('maxDepth must be an integer >= 0')
  if (!Number.isInteger(maxReportChars) || maxReportChars < 100)
    problems.push('maxReportChars must be an integer >= 100')
  if (config.deny !== undefined && !Array.isArray(config.deny)) problems.push('deny must be a list of tool names')
  if (problems.length > 0) {
    throw new HarnessError('CONFIG_INVALID', `subagents config: ${problems.join('; ')}`, { problems })
  }
  return {
    maxDepth,
    maxReportChars,
    defaultProvider: config.defaultProvider ?? 'spawn',
    persona: config.persona ?? DEFAULT_PERSONA,
    deny: config.deny ?? ['ask_user', 'exit_plan_mode'],
  }
}

/**
 * `ctx.subagents`. Providers register by name; `start()` checks the depth, asks the provider for a
 * child, logs `subagent/started` in the parent's session and hands the caller a handle it owns.
 */
export class SubagentsService extends Service {
  static readonly provide = 'subagents'
  static readonly inject = ['sessions']
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly providers = new Map<string, SubagentProvider>()
  readonly live = new Map<string, LiveSubagent>()
  /** Depth of each live agent that is a child (root agents are absent: depth 0). */
  readonly depths = new Map<string, number>()
  readonly settings: Required<SubagentsConfig>
  readonly home: Context

  constructor(ctx: Context, config: SubagentsConfig = {}) {
    const settings = checkConfig(config ?? {})
    super(ctx, 'subagents')
    this.settings = settings
    this.home = ctx
    ctx.sessions.defineEvent(...SUBAGENT_EVENT_TYPES)
    // A parent resumed after a crash: runs the log never saw end are closed honestly, never as success.
    ctx.on('session/restored', (session) => this.closeDangling(session))
  }

  /** Registers a provider for the caller's lifetime. Throws `DUPLICATE_SUBAGENT_PROVIDER`. */
  register(provider: SubagentProvider): () => void {
    return this.ctx.effect(() => {
      if (this.providers.has(provider.name)) {
        throw new HarnessError(
          'DUPLICATE_SUBAGENT_PROVIDER',
          `subagent provider "${provider.name}" is already registered`,
          {
            name: provider.name,
          },
        )
      }
      this.providers.set(provider.name, provider)
      return () => {
        if (this.providers.get(provider.name) === provider) this.providers.delete(provider.name)
      }
    }, `subagents.register(${provider.name})`)
  }

  /** The depth of an agent: 0 for a root agent, 1 for its children... */
  depthOf(agentId: string): number {
    return this.depths.get(agentId) ?? 0
  }

  /**
   * Starts a child and its first run. Throws `SUBAGENT_PROVIDER_UNKNOWN`, `SUBAGENT_DEPTH_EXCEEDED`,
   * `SUBAGENT_CANCELLED` (the signal had already fired), or what the provider throws; nothing is left
   * running when it throws. The returned handle is the caller's to dispose.
   */
  async start(request: SubagentRequest): Promise<SubagentHandle> {
    const name = request.provider ?? this.settings.defaultProvider
    const provider = this.providers.get(name)
    if (!provider) {
      throw new HarnessError(
        'SUBAGENT_PROVIDER_UNKNOWN',
        `no subagent provider "${name}"; available: ${[...this.providers.keys()].join(', ') || 'none'}`,
        { provider: name, available: [...this.providers.keys()] },
      )
    }
    const depth = this.checkDepth(request.parent)
    if (request.signal?.aborted) {
      throw new HarnessError('SUBAGENT_CANCELLED', 'the subagent was cancelled before it started', {})
    }
    const id = `sub-${randomUUID()}`
    const restriction = this.restrictionFor(depth, request.tools)
    const persona = request.persona ?? this.settings.persona
    let published: LiveSubagent | undefined
    const progress = (update: SubagentProgress) => published?.progress(update)
    const isolated = request.isolation === 'worktree' ? await this.isolate(id, request) : undefined
    if (isolated) request = isolated.request
    let child: SubagentChild
    try {
      child = await provider.start({ id, depth, request, persona, restriction, progress })
    } catch (error) {
      if (isolated) await isolated.worktrees.discard(isolated.record).catch(() => undefined)
      throw error
    }
    // Published: from here on the caller owns the child through the handle.
    const live = this.publish(provider.name, id, depth, request, child, 0)
    published = live
    if (isolated) live.isolate(isolated.worktrees, isolated.record)
    try {
      this.logStarted(live, provider.name, request, restriction, isolated?.record)
    } catch (error) {
      await live.dispose()
      throw error
    }
    this.home.emit('subagent/started', live)
    live.begin(request.prompt, request.signal)
    return live
  }

  /**
   * A git worktree of the parent's repository for a child to work in (the child's session folder, so
   * its sandbox writes there and nowhere in the parent's workspace). Throws WORKTREE_* with the reason.
   */
  private async isolate(
    id: string,
    request: SubagentRequest,
  ): Promise<{ request: SubagentRequest; worktrees: Worktrees; record: WorktreeRecord }> {
    if ((request.mode ?? 'one-shot') !== 'one-shot') {
      throw new HarnessError(
        'SUBAGENT_ISOLATION_UNSUPPORTED',
        'isolation: worktree is for one-shot subagents (without keep: true)',
        {},
      )
    }
    const worktrees = this.home.get('worktrees')
    if (!worktrees) {
      throw new HarnessError(
        'WORKTREE_UNAVAILABLE',
        'isolation: worktree needs the worktrees row of the base bundle (it is off in the SSH world); run the subagent without isolation',
        {},
      )
    }
    const from = request.cwd ?? request.parent.session.header.cwd
    const { record } = await worktrees.create({
      cwd: from,
      kind: 'subagent',
      name: `sub-${id.slice(4, 12)}`,
    })
    let inside = ''
    try {
      inside = relative(record.repo, realpathSync(from))
    } catch {}
    return { request: { ...request, cwd: join(record.path, inside) }, worktrees, record }
  }

  private logStarted(
    live: LiveSubagent,
    provider: string,
    request: SubagentRequest,
    restriction: ToolRestriction,
    worktree?: WorktreeRecord,
  ) {
    const started: SubagentStartedData = {
      subagentId: live.id,
      provider,
      mode: request.mode ?? 'one-shot',
      childSession: live.childSession,
      depth: live.depth,
      tools: {
        ...(restriction.allow ? { allow: [...restriction.allow] } : {}),
        deny: [...(restriction.deny ?? [])],
      },
    }
    if (request.description !== undefined) started.description = request.description
    if (request.callId !== undefined) started.callId = request.callId
    if (request.persona !== undefined) started.persona = request.persona
    if (request.preset !== undefined) started.preset = request.preset
    if (request.model !== undefined) started.model = JSON.parse(JSON.stringify(request.model))
    if (worktree) started.worktree = { name: worktree.name, branch: worktree.branch, path: worktree.path }
    live.log('subagent/started', started)
  }

  /**
   * Brings back a continuable child of `parent`'s session that is closed only because its owner went
   * away (`records()` says `reopenable`), from its durable session, with the descriptor its
   * `subagent/started` recorded. Throws `SUBAGENT_NOT_REOPENABLE`, `SUBAGENT_PROVIDER_UNKNOWN`,
   * `SUBAGENT_DEPTH_EXCEEDED`, or what the provider throws. The caller owns the handle.
   */
  async reopen(parent: Agent, subagentId: string): Promise<SubagentHandle> {
    const record = this.records(parent.session).find((item) => item.subagentId === subagentId)
    const started = eventData(
      parent.session.events.slice(parent.session.header.seedLength ?? 0),
      'subagent/started',
    ).find((data) => data.subagentId === subagentId)
    if (!record || !started || !record.reopenable || this.live.has(subagentId)) {
      throw new HarnessError(
        'SUBAGENT_NOT_REOPENABLE',
        `subagent ${subagentId} cannot be reopened: ${!record ? 'this session never started it' : this.live.has(subagentId) ? 'it is live' : 'it was closed on purpose or is not continuable'}`,
        { subagentId },
      )
    }
    const provider = this.providers.get(record.provider)
    if (!provider?.resume) {
      throw new HarnessError(
        'SUBAGENT_PROVIDER_UNKNOWN',
        `subagent provider "${record.provider}" is not available or cannot resume children`,
        { provider: record.provider },
      )
    }
    const depth = this.checkDepth(parent)
    const request: SubagentRequest = {
      parent,
      prompt: '',
      provider: record.provider,
      mode: 'continuable',
      ...(started.description !== undefined ? { description: started.description } : {}),
      ...(started.persona !== undefined ? { persona: started.persona } : {}),
      ...(started.preset !== undefined ? { preset: started.preset } : {}),
      ...(started.model !== undefined ? { model: started.model as Partial<LlmCallConfig> } : {}),
    }
    const restriction: ToolRestriction = {
      ...(started.tools?.allow ? { allow: [...started.tools.allow] } : {}),
      deny: [...(started.tools?.deny ?? this.restrictionFor(depth).deny ?? [])],
    }
    const persona = started.persona ?? this.settings.persona
    let published: LiveSubagent | undefined
    const progress = (update: SubagentProgress) => published?.progress(update)
    const child = await provider.resume(
      { id: subagentId, depth, request, persona, restriction, progress },
      record.childSession,
    )
    const live = this.publish(provider.name, subagentId, depth, request, child, record.runs)
    published = live
    live.log('subagent/reopened', { subagentId, childSession: child.childSession })
    // A reopened handle has no first run of its own: `result` is the last report the log holds.
    live.settle({
      subagentId,
      childSession: child.childSession,
      run: record.last?.run ?? record.runs - 1,
      outcome: record.last?.outcome ?? 'interrupted',
      text: record.last?.text ?? '',
    })
    this.home.emit('subagent/started', live)
    return live
  }

  private checkDepth(parent: Agent): number {
    const depth = this.depthOf(parent.id) + 1
    if (depth > this.settings.maxDepth) {
      throw new HarnessError(
        'SUBAGENT_DEPTH_EXCEEDED',
        `a subagent at depth ${depth - 1} cannot start another one (the limit is ${this.settings.maxDepth}); do the work yourself`,
        { depth, maxDepth: this.settings.maxDepth },
      )
    }
    return depth
  }

  private restrictionFor(depth: number, tools?: ToolRestriction): ToolRestriction {
    return {
      ...(tools?.allow ? { allow: [...tools.allow] } : {}),
      // A child at the depth limit does not see `task` at all (start() would refuse it anyway).
      deny: [
        ...new Set([
          ...this.settings.deny,
          ...(tools?.deny ?? []),
          ...(depth >= this.settings.maxDepth ? ['task'] : []),
        ]),
      ],
    }
  }

  private publish(
    provider: string,
    id: string,
    depth: number,
    request: SubagentRequest,
    child: SubagentChild,
    runs: number,
  ): LiveSubagent {
    const live = new LiveSubagent(this, provider, id, depth, request, child, runs)
    this.live.set(id, live)
    if (child.agent) this.depths.set(child.agent.id, depth)
    return live
  }

  get(id: string): SubagentHandle | undefined {
    return this.live.get(id)
  }

  /** Live children, optionally only those of one parent session. */
  list(parentSession?: string): SubagentHandle[] {
    return [...this.live.values()].filter((live) => parentSession === undefined || live.parentSession === parentSession)
  }

  /**
   * The children a session's log records, with their last known outcome. Events a fork copied from its
   * parent (before `seedLength`) are the parent's children, not this session's, and are left out.
   */
  records(session: Session): SubagentRecord[] {
    return foldSubagents(session.events.slice(session.header.seedLength ?? 0) as readonly AnySessionEvent[])
  }

  /** Appends honest closers for runs and children a restored log left open. */
  closeDangling(session: Session): void {
    for (const record of this.records(session)) {
      if (this.live.has(record.subagentId)) continue
      // Runs finish in order (FIFO), so the open ones are those after the last reported run.
      for (let run = (record.last?.run ?? -1) + 1; run < record.runs; run++) {
        session.append('subagent/finished', {
          subagentId: record.subagentId,
          childSession: record.childSession,
          run,
          outcome: 'interrupted',
          text: '',
          message: `the process ended before this run reported; its outcome is unknown. Its session ${record.childSession} keeps what it did.`,
          synthetic: true,
        })
      }
      if (record.status !== 'closed') {
        session.append('subagent/closed', {
          subagentId: record.subagentId,
          reason: 'no live owner after the session was resumed',
          synthetic: true,
        })
      }
    }
  }
}

export default SubagentsService
