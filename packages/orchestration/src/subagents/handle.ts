// The handle a caller owns: one child, its runs, and their durable lifecycle in the parent's log.
import type { Agent } from '@dsh/agent'
import { HarnessError } from '@dsh/kernel'
import type { SessionEventMap } from '@dsh/session'
import type { WorktreeRecord, Worktrees } from '@dsh/world/worktrees'
import type {
  ChildRunResult,
  SubagentChild,
  SubagentHandle,
  SubagentMode,
  SubagentProgress,
  SubagentReport,
  SubagentRequest,
  SubagentStatus,
  SubagentsService,
  SubagentWorktree,
} from './index.js'

function bound(text: string, max: number): string {
  if (text.length <= max) return text
  return `${text.slice(0, max)}\n[report truncated: ${text.length - max} more characters are in the child session]`
}

/** The handle the caller owns: one child, its runs, and their durable lifecycle in the parent's log. */
export class LiveSubagent implements SubagentHandle {
  readonly result: Promise<SubagentReport>
  readonly parentSession: string
  readonly childSession: string
  readonly mode: SubagentMode
  readonly description: string | undefined
  private active = 0
  /** Runs started and not yet reported, oldest first: a child runs them in this order (FIFO). */
  private readonly inFlight: number[] = []
  private closed = false
  private disposing: Promise<void> | undefined
  private resolveFirst!: (report: SubagentReport) => void
  private worktree: { worktrees: Worktrees; record: WorktreeRecord } | undefined

  constructor(
    private readonly service: SubagentsService,
    readonly provider: string,
    readonly id: string,
    readonly depth: number,
    private readonly request: SubagentRequest,
    private readonly child: SubagentChild,
    private runs: number,
  ) {
    this.parentSession = request.parent.session.id
    this.childSession = child.childSession
    this.mode = request.mode ?? 'one-shot'
    this.description = request.description
    this.result = new Promise((resolve) => {
      this.resolveFirst = resolve
    })
  }

  get agent(): Agent | undefined {
    return this.child.agent
  }

  get status(): SubagentStatus {
    return this.closed ? 'closed' : this.active > 0 ? 'running' : 'idle'
  }

  /** Appends to the parent's log while that session is live in this process. */
  log<
    T extends
      | 'subagent/started'
      | 'subagent/message'
      | 'subagent/finished'
      | 'subagent/closed'
      | 'subagent/reopened'
      | 'subagent/progress',
  >(type: T, data: SessionEventMap[T]): void {
    const session = this.request.parent.session
    if (this.service.home.sessions.get(session.id) !== session) return
    session.append(type, data)
  }

  /** Logs a remote child's progress under the run it is working on (the oldest one in flight). */
  progress(update: SubagentProgress): void {
    this.log('subagent/progress', { subagentId: this.id, run: this.inFlight[0] ?? this.runs - 1, ...update })
  }

  /** The child works in this worktree: each run's report says where its work is. */
  isolate(worktrees: Worktrees, record: WorktreeRecord): void {
    this.worktree = { worktrees, record }
  }

  /**
   * A worktree child's work after a run: committed on its branch and kept for the user to merge, or,
   * when it changed nothing, the worktree and branch removed. A git failure is reported, never thrown.
   */
  private async settleWorktree(report: SubagentReport): Promise<SubagentWorktree | string | undefined> {
    if (!this.worktree) return undefined
    const { worktrees, record } = this.worktree
    const where = { name: record.name, branch: record.branch, path: record.path }
    try {
      // Kept first (which commits the work), then what it changed: an unchanged one goes.
      await worktrees.keep(record, `dsh subagent ${this.id}${this.description ? `: ${this.description}` : ''}`)
      const { files } = await worktrees.diff(record)
      if (files.length > 0) return { ...where, files }
      await worktrees.discard(record)
      return { ...where, files, removed: true }
    } catch (error) {
      return `the worktree ${record.path} could not be saved (${error instanceof Error ? error.message : String(error)}); its work is still there (run ${report.run})`
    }
  }

  settle(report: SubagentReport): void {
    this.resolveFirst(report)
  }

  begin(prompt: string, signal: AbortSignal | undefined): void {
    void this.run(prompt, signal).then((report) => this.resolveFirst(report))
  }

  async send(text: string, signal?: AbortSignal): Promise<SubagentReport> {
    if (this.closed) {
      throw new HarnessError('SUBAGENT_CLOSED', `subagent ${this.id} was closed; start a new one`, { id: this.id })
    }
    return this.run(text, signal)
  }

  private async run(text: string, signal: AbortSignal | undefined): Promise<SubagentReport> {
    const run = this.runs++
    this.active++
    this.inFlight.push(run)
    if (run > 0) this.log('subagent/message', { subagentId: this.id, run, text })
    const onAbort = () => void this.cancel('the parent tool call was cancelled')
    signal?.addEventListener('abort', onAbort, { once: true })
    let result: ChildRunResult
    try {
      result = signal?.aborted
        ? { outcome: 'cancelled', text: '', message: 'cancelled before it ran' }
        : await this.child.prompt(text)
    } catch (error) {
      result = { outcome: 'failed', text: '', message: error instanceof Error ? error.message : String(error) }
    } finally {
      signal?.removeEventListener('abort', onAbort)
      this.active--
      this.inFlight.splice(this.inFlight.indexOf(run), 1)
    }
    const report: SubagentReport = {
      subagentId: this.id,
      childSession: this.childSession,
      run,
      outcome: result.outcome,
      text: bound(result.text, this.service.settings.maxReportChars),
    }
    if (result.reason !== undefined) report.reason = result.reason
    if (result.message !== undefined) report.message = result.message
    const worktree = await this.settleWorktree(report)
    if (typeof worktree === 'string') report.message = [report.message, worktree].filter(Boolean).join('; ')
    else if (worktree) report.worktree = worktree
    this.log('subagent/finished', { ...report })
    this.service.home.emit('subagent/finished', report)
    return report
  }

  async cancel(reason = 'cancelled'): Promise<void> {
    await this.child.cancel(reason)
  }

  dispose(options: { final?: boolean } = {}): Promise<void> {
    this.disposing ??= (async () => {
      this.closed = true
      try {
        await this.child.dispose()
      } finally {
        this.service.live.delete(this.id)
        if (this.child.agent) this.service.depths.delete(this.child.agent.id)
        this.log('subagent/closed', options.final ? { subagentId: this.id, final: true } : { subagentId: this.id })
      }
    })()
    return this.disposing
  }
}
