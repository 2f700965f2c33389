// A session's background jobs as a person watches them: the list, a peek at the output that leaves
// the model's read cursor alone, and kill. Needs a `ctx.jobs` row; without one a session has no jobs.
import { HarnessError } from '@dsh/kernel'
import type { JobInfo, JobOutputPeek } from '@dsh/world/jobs'
import type { HostAccess } from './access.js'

export class HostJobs {
  constructor(private readonly host: HostAccess) {}

  /** The background jobs of the session's attached agent. */
  of(sessionId: string): JobInfo[] {
    const agent = this.host.attached(sessionId)
    const jobs = this.host.ctx.get('jobs')
    if (!agent || !jobs) return []
    return jobs.list({ sessionId, agentId: agent.id })
  }

  /** Output of one of the session's jobs from byte `from`. Throws `JOB_NOT_FOUND`, `SESSION_NOT_ATTACHED`. */
  output(sessionId: string, jobId: string, from: number, maxBytes?: number): JobOutputPeek {
    const agent = this.host.agent(sessionId)
    return this.service(jobId).peek(jobId, { sessionId, agentId: agent.id }, from, maxBytes)
  }

  /** Kills one of the session's jobs and waits until it is gone. Throws `JOB_NOT_FOUND`. */
  async kill(sessionId: string, jobId: string): Promise<void> {
    const agent = this.host.agent(sessionId)
    await this.service(jobId).kill(jobId, { sessionId, agentId: agent.id })
    this.host.changed(sessionId)
  }

  private service(jobId: string) {
    const jobs = this.host.ctx.get('jobs')
    // Without a jobs row no job of that id can exist: the same answer as an unknown id.
    if (!jobs) throw new HarnessError('JOB_NOT_FOUND', `no job ${jobId}`, { jobId })
    return jobs
  }
}
