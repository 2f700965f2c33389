// The model's side of `ctx.subagents`: `task` (delegate and get the child's report; parallel-safe, so
// several run at once), and for children kept alive with `keep: true`, `subagent_send` (a follow-up,
// queued FIFO as the child's next turn), `subagent_list` and `subagent_close`.
import type { Agent } from '@dsh/agent'
import { defineTool, ToolError } from '@dsh/agent/tools'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/world/sandbox'
import { type SubagentHandle, type SubagentRecord, type SubagentReport, worktreeNote } from './index.js'

interface TaskArgs {
  prompt: string
  description?: string
  provider?: string
  persona?: string
  tools?: string[]
  preset?: string
  keep?: boolean
  isolation?: 'none' | 'worktree'
}

function header(report: SubagentReport): string {
  const how =
    report.outcome === 'completed' ? 'completed' : `${report.outcome}${report.reason ? ` (${report.reason})` : ''}`
  return `[subagent ${report.subagentId} run ${report.run} ${how}; child session ${report.childSession}]`
}

/** The model-facing text of a report; an unfinished run is an error result the model can read. */
export function formatReport(report: SubagentReport, kept = false): { content: string; isError: boolean } {
  const lines = [header(report)]
  if (report.message && report.outcome !== 'completed') lines.push(report.message)
  lines.push(report.text.trim() ? report.text : '(the subagent gave no final text)')
  if (report.worktree) lines.push(worktreeNote(report.worktree))
  if (kept) lines.push(`The subagent stays available: use subagent_send with subagent_id "${report.subagentId}".`)
  return { content: lines.join('\n'), isError: report.outcome !== 'completed' }
}

/**
 * What the model must know when its child runs narrower than asked: the child's log records a
 * `sandbox/mode` with `requested` when a ceiling (its parent's mode) clamped its preset's mode.
 */
export function clampNote(handle: SubagentHandle): string | undefined {
  const events = handle.agent?.session.events ?? []
  const clamped = events.filter((event) => event.type === 'sandbox/mode' && event.data.requested !== undefined).at(-1)
  if (clamped?.type !== 'sandbox/mode') return undefined
  return `[sandbox: the subagent asked for "${clamped.data.requested}" and runs in ${clamped.data.mode}: a subagent never gets a wider permission mode than yours]`
}

function recordLine(record: SubagentRecord): string {
  const last = record.last ? ` last=${record.last.outcome}${record.last.synthetic ? ' (closed on resume)' : ''}` : ''
  const label = record.description ? ` "${record.description}"` : ''
  const status = record.reopenable ? 'closed (reopens on subagent_send)' : record.status
  return `${record.subagentId} ${record.provider} ${record.mode} ${status} runs=${record.runs}${last}${label}`
}

function asToolError(error: unknown): never {
  if (error instanceof HarnessError) throw new ToolError(error.message, error.code)
  throw error
}

export default {
  name: 'subagent-tools',
  inject: ['subagents', 'agents', 'tools'],
  apply(ctx: Context) {
    /** Children kept alive for follow-ups, by id, with the agent that owns them. */
    const kept = new Map<string, { handle: SubagentHandle; owner: string }>()

    const parentOf = (agentId: string | undefined): Agent => {
      const parent = agentId === undefined ? undefined : ctx.agents.get(agentId)
      if (!parent) throw new ToolError('subagent tools run only inside an agent', 'SUBAGENT_NO_PARENT')
      return parent
    }
    const keptFor = async (id: string, agentId: string | undefined, reopen: boolean): Promise<SubagentHandle> => {
      const entry = kept.get(id)
      if (entry && entry.owner === agentId) return entry.handle
      const parent = parentOf(agentId)
      const known = ctx.subagents.records(parent.session).find((record) => record.subagentId === id)
      // A continuable child whose owner went away (a restart) comes back from its durable session.
      if (reopen && known?.reopenable) {
        const handle = await ctx.subagents.reopen(parent, id).catch(asToolError)
        kept.set(id, { handle, owner: parent.id })
        return handle
      }
      throw new ToolError(
        known
          ? `subagent ${id} is ${known.status === 'closed' ? 'closed' : 'not live in this process'}; start a new task (provider "fork" carries this conversation)`
          : `no subagent ${id}; subagent_list shows yours`,
        'SUBAGENT_NOT_LIVE',
      )
    }
    const release = async (id: string, final = false) => {
      const entry = kept.get(id)
      kept.delete(id)
      await entry?.handle.dispose({ final })
    }

    // Children kept by an agent go when it goes.
    ctx.on('agent/disposed', (agent) => {
      for (const [id, entry] of kept) if (entry.owner === agent.id) void release(id)
    })
    ctx.effect(
      () => () => Promise.all([...kept.keys()].map((id) => release(id))).then(() => undefined),
      'subagent-tools.kept',
    )

    const task = defineTool<TaskArgs>({
      name: 'task',
      description: [
        'Delegate a self-contained task to a subagent and get its final report back.',
        'Several task calls in one response run in parallel; merge their reports yourself.',
        'provider "spawn" (default) starts with an empty context: put everything it needs in prompt.',
        'provider "fork" starts with this conversation up to the end of the previous turn.',
        'tools narrows the tools it may use (names); the subagent cannot ask the user anything.',
        'preset runs it with an agent preset (e.g. "ask": read-only tools for questions, "plan": investigate',
        'and plan); default: your own. It never gets a tool you do not have.',
        'keep: true keeps it for follow-ups with subagent_send (close it with subagent_close).',
        'isolation "worktree" runs it in its own git worktree on a new branch: its edits stay out of your',
        'workspace (parallel tasks cannot clash); its report names the branch for the user to merge.',
      ].join('\n'),
      parameters: {
        type: 'object',
        properties: {
          prompt: { type: 'string', minLength: 1, description: 'The task, complete and self-contained.' },
          description: { type: 'string', description: 'A short label (3-8 words).' },
          provider: {
            type: 'string',
            description: 'spawn (default), fork, or acp:<name> for another agent your instructions list.',
          },
          persona: { type: 'string', description: 'Optional role or instructions for the subagent.' },
          tools: { type: 'array', items: { type: 'string' }, description: 'Only these tools (default: yours).' },
          preset: { type: 'string', description: 'Agent preset of the subagent (default: yours), e.g. ask or plan.' },
          keep: { type: 'boolean', description: 'Keep the subagent for follow-ups (default false).' },
          isolation: {
            type: 'string',
            enum: ['none', 'worktree'],
            description: 'worktree: work in a separate git worktree and branch (one-shot only). Default none.',
          },
        },
        required: ['prompt'],
        additionalProperties: false,
      },
      mode: 'parallel-safe',
      presentation: (args) => ({
        kind: 'generic',
        title: 'Task',
        subtitle: args.description ?? (args.prompt.length > 60 ? `${args.prompt.slice(0, 57)}...` : args.prompt),
      }),
      async execute(args, call) {
        const parent = parentOf(call.agentId)
        const handle = await ctx.subagents
          .start({
            parent,
            prompt: args.prompt,
            mode: args.keep ? 'continuable' : 'one-shot',
            signal: call.signal,
            callId: call.callId,
            ...(args.provider !== undefined ? { provider: args.provider } : {}),
            ...(args.description !== undefined ? { description: args.description } : {}),
            ...(args.persona !== undefined ? { persona: args.persona } : {}),
            ...(args.tools !== undefined ? { tools: { allow: args.tools } } : {}),
            ...(args.preset !== undefined ? { preset: args.preset } : {}),
            ...(args.isolation === 'worktree' ? { isolation: 'worktree' as const } : {}),
          })
          .catch(asToolError)
        if (args.keep) kept.set(handle.id, { handle, owner: parent.id })
        try {
          const report = await handle.result
          if (args.keep && report.outcome !== 'completed') await release(handle.id)
          const result = formatReport(report, args.keep === true && report.outcome === 'completed')
          const note = clampNote(handle)
          return note ? { ...result, content: `${note}\n${result.content}` } : result
        } finally {
          if (!args.keep) await handle.dispose()
        }
      },
    })

    const send = defineTool<{ subagent_id: string; message: string; wait?: boolean }>({
      name: 'subagent_send',
      deferred: true,
      description: [
        'Send a follow-up to a subagent you kept (task with keep: true; one closed by a restart is reopened',
        'from its saved session). Messages queue in order; each',
        "runs as the subagent's next turn. wait (default true) returns that turn's report; with wait false",
        'the report reaches you as context of a later step.',
      ].join(' '),
      parameters: {
        type: 'object',
        properties: {
          subagent_id: { type: 'string' },
          message: { type: 'string', minLength: 1 },
          wait: { type: 'boolean' },
        },
        required: ['subagent_id', 'message'],
        additionalProperties: false,
      },
      mode: 'parallel-safe',
      presentation: (args) => ({ kind: 'generic', title: 'Message subagent', subtitle: args.subagent_id }),
      async execute(args, call) {
        const handle = await keptFor(args.subagent_id, call.agentId, true)
        if (args.wait === false) {
          const parent = parentOf(call.agentId)
          void handle.send(args.message).then((report) => {
            if (!parent.disposed) parent.inject(formatReport(report, true).content)
          })
          return `queued for subagent ${handle.id}; its report will arrive as context`
        }
        return formatReport(await handle.send(args.message, call.signal).catch(asToolError), true)
      },
    })

    const list = defineTool<Record<string, never>>({
      name: 'subagent_list',
      deferred: true,
      description: 'List the subagents this session started, with their status and last outcome.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      mode: 'parallel-safe',
      presentation: () => ({ kind: 'generic', title: 'Subagents' }),
      execute(_args, call) {
        const parent = parentOf(call.agentId)
        const records = ctx.subagents.records(parent.session)
        return records.length === 0 ? 'no subagents' : records.map(recordLine).join('\n')
      },
    })

    const close = defineTool<{ subagent_id: string }>({
      name: 'subagent_close',
      deferred: true,
      description: 'Close a subagent you kept: it stops and cannot receive messages any more.',
      parameters: {
        type: 'object',
        properties: { subagent_id: { type: 'string' } },
        required: ['subagent_id'],
        additionalProperties: false,
      },
      presentation: (args) => ({ kind: 'generic', title: 'Close subagent', subtitle: args.subagent_id }),
      async execute(args, call) {
        await keptFor(args.subagent_id, call.agentId, false)
        await release(args.subagent_id, true)
        return `subagent ${args.subagent_id} closed`
      },
    })

    for (const tool of [task, send, list, close]) ctx.tools.register(tool)
  },
}
