// @dsh/world/jobs: `ctx.jobs`, the live registry of background work (a `bash` run in the background).
// A job belongs to the exact owner identity that started it (session + agent): ids are predictable,
// so every read, list and kill is authorized by that identity. Each job has one output cursor. A
// finished job notifies its agent, waking it at most `maxWakeups` times in a row; a disposed agent's
// running jobs are killed. Nothing here is
// durable: jobs die with the process (the session log keeps the tool calls about them).
import type { Agent } from '@dsh/agent'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import { isEvent } from '@dsh/session'

declare module 'cordis' {
  interface Context {
    jobs: JobsService
  }
  interface Events {
    /** A job reached a final status (its output stays readable until it is evicted). */
    'jobs/finished'(job: JobInfo): void
  }
}

/** Who a job belongs to. Two owners are the same only when both fields are equal. */
export interface JobOwner {
  sessionId?: string
  agentId?: string
}

export type JobStatus = 'running' | 'completed' | 'failed' | 'killed'

/** How a producer's work ended. `summary` is one line such as `exit code 0`. */
export interface JobOutcome {
  status: Exclude<JobStatus, 'running'>
  summary: string
}

/** The live resource behind a job (a started shell process). The registry owns it once started. */
export interface JobProducer {
  /** Output bytes from `start` (at most `maxBytes`); `lost` counts bytes no longer readable. */
  read(start: number, maxBytes: number): { text: string; next: number; lost: number }
  /** Total output bytes so far. */
  totalBytes(): number
  /** Settles when the work and all its resources are gone; must not reject. */
  readonly done: Promise<JobOutcome>
  /** Stops the work; `done` settles afterwards. */
  cancel(): Promise<unknown>
}

export interface JobInfo {
  id: string
  owner: JobOwner
  kind: string
  /** What the job runs (e.g. the command line). */
  title: string
  status: JobStatus
  summary?: string
  startedAt: number
  endedAt?: number
  /** Output bytes produced / not yet read through the cursor. */
  outputBytes: number
  unreadBytes: number
}

export interface JobOutputRead {
  job: JobInfo
  text: string
  /** Bytes skipped because they were no longer readable. */
  lost: number
  /** More unread output remains after this read. */
  more: boolean
}

/** A read from a byte offset that leaves the cursor alone (`JobsService.peek`). */
export interface JobOutputPeek {
  job: JobInfo
  text: string
  /** The offset to peek from next. */
  next: number
  /** Bytes between `start` and `next` that were no longer readable. */
  lost: number
}

export interface JobsConfig {
  /** Running jobs one owner may have at once. Default 8. */
  maxRunningPerOwner?: number
  /** Finished jobs kept for reading; the oldest beyond this are evicted. Default 64. */
  maxFinished?: number
  /** Consecutive wake-ups of an idle agent by finished jobs before notices only ride along. Default 3. */
  maxWakeups?: number
}

interface Entry {
  info: JobInfo
  producer: JobProducer
  cursor: number
}

interface UserEventData {
  origin?: string
  message?: { content?: { type: string; text?: string }[] }
}

/** Job notices start with this; the wake-up budget ignores them (and loop-generated context). */
const NOTICE = '[job '

function isNotice(data: UserEventData | undefined): boolean {
  if (data?.origin !== undefined) return true
  const first = data?.message?.content?.[0]
  return first?.type === 'text' && (first.text ?? '').startsWith(NOTICE)
}

const sameOwner = (a: JobOwner, b: JobOwner) => a.sessionId === b.sessionId && a.agentId === b.agentId

export class JobsService extends Service {
  static readonly provide = 'jobs'
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly entries = new Map<string, Entry>()
  private readonly wakeups = new Map<string, number>()
  private seq = 0
  private readonly config: Required<JobsConfig>
  private readonly home: Context

  constructor(ctx: Context, config: JobsConfig = {}) {
    super(ctx, 'jobs')
    this.home = ctx
    this.config = { maxRunningPerOwner: 8, maxFinished: 64, maxWakeups: 3, ...(config ?? {}) }
    ctx.effect(
      () => async () => {
        const running = [...this.entries.values()].filter((e) => e.info.status === 'running')
        await Promise.all(running.map((entry) => entry.producer.cancel().then(() => entry.producer.done)))
        this.entries.clear()
      },
      'jobs.teardown',
    )
    // An agent's jobs end with it: its scope owns what it started, even in the background.
    ctx.on('agent/disposed', (agent: Agent) => {
      const owner = { sessionId: agent.session.id, agentId: agent.id }
      for (const entry of this.entries.values()) {
        if (entry.info.status === 'running' && sameOwner(entry.info.owner, owner)) void this.kill(entry.info.id, owner)
      }
    })
    // A user message (not one of our notices, not loop context) resets the wake-up budget of the
    // session's agents.
    ctx.inject(['sessions'], (inner) => {
      inner.sessions.watch((session, event) => {
        if (!isEvent(event, 'user/message') || isNotice(event.data)) return
        for (const key of this.wakeups.keys()) if (key.startsWith(`${session.id}\u0000`)) this.wakeups.delete(key)
      })
    })
  }

  /**
   * Checks capacity, then calls `start` to create the producer (so a refused job never starts), and
   * registers it. `start` receives the registry's own context: resources started through it belong to
   * the registry, not to the caller (a tool's unload does not stop its jobs). Throws `JOBS_CAPACITY`
   * (before starting) or whatever `start` throws.
   */
  async start(request: {
    owner: JobOwner
    kind: string
    title: string
    start: (owner: Context) => Promise<JobProducer>
  }): Promise<JobInfo> {
    this.checkCapacity(request.owner)
    const producer = await request.start(this.home)
    const id = `job-${++this.seq}`
    const info: JobInfo = {
      id,
      owner: { ...request.owner },
      kind: request.kind,
      title: request.title,
      status: 'running',
      startedAt: Date.now(),
      outputBytes: 0,
      unreadBytes: 0,
    }
    const entry: Entry = { info, producer, cursor: 0 }
    this.entries.set(id, entry)
    void producer.done.then(
      (outcome) => this.finish(entry, outcome),
      (error) => this.finish(entry, { status: 'failed', summary: String(error) }),
    )
    return this.snapshot(entry)
  }

  /** Throws `JOBS_CAPACITY` when `owner` may not start another job now. */
  checkCapacity(owner: JobOwner): void {
    const running = [...this.entries.values()].filter(
      (e) => e.info.status === 'running' && sameOwner(e.info.owner, owner),
    )
    if (running.length >= this.config.maxRunningPerOwner) {
      throw new HarnessError(
        'JOBS_CAPACITY',
        `already ${running.length} background jobs running (the limit is ${this.config.maxRunningPerOwner}); wait for one or kill one with job_kill`,
        { running: running.length, limit: this.config.maxRunningPerOwner },
      )
    }
  }

  /** The owner's jobs, oldest first. */
  list(owner: JobOwner): JobInfo[] {
    return [...this.entries.values()].filter((e) => sameOwner(e.info.owner, owner)).map((e) => this.snapshot(e))
  }

  /** One of the owner's jobs. Throws `JOB_NOT_FOUND` for an unknown id or another owner's job. */
  get(id: string, owner: JobOwner): JobInfo {
    return this.snapshot(this.entry(id, owner))
  }

  /** Reads unread output (at most `maxBytes`) and advances the job's one cursor. */
  read(id: string, owner: JobOwner, maxBytes = 32_768): JobOutputRead {
    const entry = this.entry(id, owner)
    const range = entry.producer.read(entry.cursor, maxBytes)
    entry.cursor = range.next
    const job = this.snapshot(entry)
    return { job, text: range.text, lost: range.lost, more: job.unreadBytes > 0 }
  }

  /**
   * Reads output from byte `start` (at most `maxBytes`) without moving the job's cursor: a person
   * watching the output must not change what the model reads next. Throws `JOB_NOT_FOUND`.
   */
  peek(id: string, owner: JobOwner, start: number, maxBytes = 32_768): JobOutputPeek {
    const entry = this.entry(id, owner)
    const range = entry.producer.read(Math.max(0, start), maxBytes)
    return { job: this.snapshot(entry), text: range.text, next: range.next, lost: range.lost }
  }

  /**
   * Waits up to `ms` for unread output or the end of a running job (returns at once when there is
   * either, or when `signal` aborts). Throws `JOB_NOT_FOUND`.
   */
  async waitForOutput(id: string, owner: JobOwner, ms: number, signal?: AbortSignal): Promise<void> {
    const entry = this.entry(id, owner)
    const until = Date.now() + Math.max(0, ms)
    let finished = false
    void entry.producer.done.then(() => {
      finished = true
    })
    await Promise.resolve()
    while (!finished && !signal?.aborted && entry.producer.totalBytes() <= entry.cursor && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(1, until - Date.now()))))
    }
  }

  /** Stops a running job and waits until it is gone. Idempotent. Throws `JOB_NOT_FOUND`. */
  async kill(id: string, owner: JobOwner): Promise<JobInfo> {
    const entry = this.entry(id, owner)
    if (entry.info.status === 'running') {
      entry.info.status = 'killed'
      await entry.producer.cancel()
      await entry.producer.done
    }
    return this.snapshot(entry)
  }

  /** Resolves when the job is no longer running. */
  async wait(id: string, owner: JobOwner): Promise<JobInfo> {
    const entry = this.entry(id, owner)
    await entry.producer.done
    await Promise.resolve()
    return this.snapshot(entry)
  }

  private entry(id: string, owner: JobOwner): Entry {
    const entry = this.entries.get(id)
    if (!entry || !sameOwner(entry.info.owner, owner)) {
      throw new HarnessError('JOB_NOT_FOUND', `no job ${id} (job_list shows your jobs)`, { id })
    }
    return entry
  }

  private snapshot(entry: Entry): JobInfo {
    const total = entry.producer.totalBytes()
    return {
      ...entry.info,
      owner: { ...entry.info.owner },
      outputBytes: total,
      unreadBytes: Math.max(0, total - entry.cursor),
    }
  }

  private finish(entry: Entry, outcome: JobOutcome): void {
    const killed = entry.info.status === 'killed'
    entry.info.status = killed ? 'killed' : outcome.status
    entry.info.summary = outcome.summary
    entry.info.endedAt = Date.now()
    this.evict()
    const info = this.snapshot(entry)
    this.home.emit('jobs/finished', info)
    if (!killed) this.notify(info)
  }

  private evict(): void {
    const finished = [...this.entries.values()].filter((e) => e.info.status !== 'running')
    for (const entry of finished.slice(0, Math.max(0, finished.length - this.config.maxFinished))) {
      this.entries.delete(entry.info.id)
    }
  }

  /** Tells the owning agent: wakes it when idle and within budget, else the notice rides along. */
  private notify(info: JobInfo): void {
    const agents = this.home.get('agents')
    const agent = info.owner.agentId ? agents?.get(info.owner.agentId) : undefined
    if (!agent || agent.disposed) return
    const text = `${NOTICE}${info.id} ${info.status}: ${info.summary ?? ''}] ${info.title}\nIts output has ${info.unreadBytes} unread bytes; read it with job_output.`
    const key = `${agent.session.id}\u0000${agent.id}`
    const used = this.wakeups.get(key) ?? 0
    if (agent.phase === 'idle' && used < this.config.maxWakeups) {
      this.wakeups.set(key, used + 1)
      agent.followup({ role: 'user', content: [{ type: 'text', text }] })
    } else {
      agent.inject({ role: 'user', content: [{ type: 'text', text }] })
    }
  }
}

export default JobsService
