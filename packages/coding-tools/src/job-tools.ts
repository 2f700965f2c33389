// @dsh/coding-tools/jobs: job_output, job_list and job_kill over `ctx.jobs`. Every call is authorized
// by the caller's exact identity (session + agent): another agent's job reads as `[no job ID]`.

import { defineTool, type ToolCallContext, ToolError } from '@dsh/agent/tools'
import { type Context, HarnessError } from '@dsh/kernel'
import type { JobInfo, JobOwner } from '@dsh/world/jobs'
import { description } from './shared.js'

export const name = 'coding-tools-jobs'
export const inject = ['tools', 'jobs']

const ownerOf = (call: ToolCallContext): JobOwner => ({
  ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
  ...(call.agentId === undefined ? {} : { agentId: call.agentId }),
})

/** `[job job-1 completed: exit code 0]` */
export function statusLine(job: JobInfo): string {
  return `[job ${job.id} ${job.status}${job.summary && job.status !== 'killed' ? `: ${job.summary}` : ''}]`
}

function guard<T>(id: string, body: () => T): T {
  try {
    return body()
  } catch (error) {
    if (HarnessError.is(error, 'JOB_NOT_FOUND'))
      throw new ToolError(`[no job ${id}] It is unknown or not yours; job_list shows your jobs.`, error.code)
    throw error
  }
}

export function apply(ctx: Context): void {
  const jobOutput = defineTool<{ job_id: string; max_bytes?: number; wait_ms?: number }>({
    name: 'job_output',
    readOnly: true,
    description: description('job_output'),
    mode: 'parallel-safe',
    parameters: {
      type: 'object',
      properties: {
        job_id: { type: 'string', description: 'The id bash returned, e.g. "job-1".' },
        max_bytes: {
          type: 'integer',
          minimum: 1,
          maximum: 1048576,
          description: 'At most this many bytes. Default 32768.',
        },
        wait_ms: {
          type: 'integer',
          minimum: 0,
          maximum: 60000,
          description:
            'When there is no new output yet, wait up to this long for some (or for the job to end). Default 0.',
        },
      },
      required: ['job_id'],
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'generic', title: 'Job output', subtitle: args.job_id }),
    async execute(args, call) {
      if (args.wait_ms) {
        await guard(args.job_id, () =>
          ctx.jobs.waitForOutput(args.job_id, ownerOf(call), args.wait_ms ?? 0, call.signal),
        )
      }
      const read = guard(args.job_id, () => ctx.jobs.read(args.job_id, ownerOf(call), args.max_bytes ?? 32_768))
      const parts = [statusLine(read.job)]
      if (read.lost > 0) parts.push(`[${read.lost} bytes of earlier output are no longer available]`)
      parts.push(read.text === '' ? '(no new output)' : read.text.replace(/\n$/, ''))
      if (read.more) parts.push(`[${read.job.unreadBytes} more bytes unread; call job_output again]`)
      return parts.join('\n')
    },
  })

  const jobList = defineTool<Record<string, never>>({
    name: 'job_list',
    description: description('job_list'),
    mode: 'parallel-safe',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    presentation: () => ({ kind: 'generic', title: 'Jobs' }),
    execute(_args, call) {
      const jobs = ctx.jobs.list(ownerOf(call))
      if (jobs.length === 0) return 'No background jobs.'
      return jobs.map((job) => `${statusLine(job)} ${job.unreadBytes} unread bytes: ${job.title}`).join('\n')
    },
  })

  const jobKill = defineTool<{ job_id: string }>({
    name: 'job_kill',
    description: description('job_kill'),
    parameters: {
      type: 'object',
      properties: { job_id: { type: 'string', description: 'The job to stop.' } },
      required: ['job_id'],
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'generic', title: 'Kill job', subtitle: args.job_id }),
    async execute(args, call) {
      const job = await guard(args.job_id, () => ctx.jobs.kill(args.job_id, ownerOf(call)))
      return `${statusLine(job)} ${job.title}`
    },
  })

  for (const tool of [jobOutput, jobList, jobKill]) ctx.tools.register(tool)
}

/** The plugin (bundle rows use this default export). */
export default { name, inject, apply }
