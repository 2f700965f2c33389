// The model's and the person's side of `ctx.workflows`. Tools `workflow` (run a plan, or resume one
// by id) and `loop` block the tool call until the work ends; the tool call's cancel cancels every
// child. Commands `/workflow` and `/loop` start the work in the background and return its id; when it
// ends its result is injected as context of the agent (logged, so the model sees it on its next step).
import type { Agent } from '@dsh/agent'
import { defineTool, ToolError } from '@dsh/agent/tools'
import { type CommandContext, requireAgent, usageError } from '@dsh/interaction'
import { type Context, HarnessError } from '@dsh/kernel'
import type { LoopRecord, LoopResult, WorkflowRecord, WorkflowResult } from './index.js'
import { splitArgs } from './words.js'

function asToolError(error: unknown): never {
  if (error instanceof HarnessError) throw new ToolError(error.message, error.code)
  throw error
}

export function formatWorkflow(result: WorkflowResult): { content: string; isError: boolean } {
  const head = `[workflow ${result.workflowId} ${result.outcome}]`
  const body = result.outcome === 'completed' ? result.text : (result.message ?? '')
  const hint =
    result.outcome === 'completed' ? '' : `\nResume it with the workflow tool: { "resume": "${result.workflowId}" }`
  return { content: `${head}\n${body}${hint}`, isError: result.outcome !== 'completed' }
}

export function formatLoop(result: LoopResult): { content: string; isError: boolean } {
  const lines = [
    `[loop ${result.loopId} ${result.outcome} after ${result.iterations} iteration(s), ${result.tokens} tokens]`,
    ...(result.message ? [result.message] : []),
    'Last check output:',
    result.output || '(none)',
    'Last child report:',
    result.text || '(none)',
  ]
  return { content: lines.join('\n'), isError: result.outcome !== 'passed' }
}

/** One line per workflow and one per task: the tree surfaces and `/workflow list` show. */
export function describeWorkflows(records: readonly WorkflowRecord[], running: (id: string) => boolean): string {
  if (records.length === 0) return 'no workflows in this session'
  const lines: string[] = []
  for (const record of records) {
    const status = record.status === 'running' && !running(record.workflowId) ? 'running elsewhere?' : record.status
    lines.push(
      `${record.workflowId}${record.name ? ` "${record.name}"` : ''} ${status} (${record.completed.size} task(s) done)`,
    )
    for (const task of record.tasks) lines.push(`  ${task.key} ${task.status} ${task.childSession}`)
  }
  return lines.join('\n')
}

const PLAN_HELP = [
  'plan: { "name"?, "concurrency"?, "steps": [ { "id", "prompt", "forEach"?, "concurrency"?, "provider"?, "model"?, "preset"?, "tools"?, "description"?, "isolation"? } ] }.',
  'isolation "worktree" runs each child of a step in its own git worktree and branch (edits stay out of your workspace; the report names the branch).',
  'preset runs a step with an agent preset (e.g. "plan" or "ask": read-only tools); default: yours. A step never gets a tool you do not have.',
  'Steps run in order; each is one subagent with a fresh context (put everything it needs in its prompt).',
  'forEach fans a step out: one subagent per item (a list of strings, or "{{steps.<id>}}" whose lines are the items), at most concurrency at once; its prompt uses {{item}}.',
  "A prompt may use {{steps.<id>}}: the report of an earlier step (for a fan-out, every item's report under its item) - that is the fan-in.",
  "The last step's report is the workflow's result.",
].join('\n')

function injectWhenDone(agent: Agent, done: Promise<{ content: string }>): void {
  void done.then((formatted) => {
    if (!agent.disposed) agent.inject(formatted.content)
  })
}

const LOOP_USAGE = '"<task>" --until "<command>" [--max N] [--budget TOKENS]'

/** One line per loop of a session (`/loop list`). */
export function describeLoops(records: readonly LoopRecord[]): string {
  if (records.length === 0) return 'no loops in this session'
  return records
    .map(
      (record) =>
        `${record.loopId} ${record.status} ${record.iterations}/${record.maxIterations} until ${record.until}`,
    )
    .join('\n')
}

function parseLoopArgs(args: string): { task: string; until: string; max?: number; budget?: number } {
  const usage = LOOP_USAGE
  const words = splitArgs(args)
  const rest: string[] = []
  const options: Record<string, string> = {}
  for (let index = 0; index < words.length; index++) {
    const word = words[index] as string
    if (word === '--until' || word === '--max' || word === '--budget') {
      const value = words[++index]
      if (value === undefined) throw usageError('loop', usage, `${word} needs a value`)
      options[word.slice(2)] = value
    } else rest.push(word)
  }
  if (rest.length === 0 || !options.until) throw usageError('loop', usage, 'a task and --until are required')
  const number = (name: string) => {
    const value = options[name]
    if (value === undefined) return undefined
    if (!/^\d+$/.test(value)) throw usageError('loop', usage, `--${name} must be a whole number`)
    return Number(value)
  }
  const max = number('max')
  const budget = number('budget')
  return {
    task: rest.join(' '),
    until: options.until,
    ...(max !== undefined ? { max } : {}),
    ...(budget !== undefined ? { budget } : {}),
  }
}

function registerCommands(ctx: Context): void {
  const workflowUsage = 'run <plan JSON> | resume <id> | cancel <id> | list'
  ctx.commands.register({
    name: 'workflow',
    description: 'Run a workflow plan of subagents in the background, resume or cancel one, or list them',
    usage: workflowUsage,
    async run(args, context: CommandContext) {
      const agent = requireAgent(context)
      const [verb = 'list', ...rest] = args.split(/\s+/)
      const operand = args.slice(verb.length).trim()
      if (verb === 'list') {
        return describeWorkflows(ctx.workflows.records(agent.session), (id) => ctx.workflows.isRunning(id))
      }
      if (verb === 'cancel' && rest.length === 1) {
        const cancelled = await ctx.workflows.cancel(operand)
        return cancelled ? `${operand} cancelled` : `${operand} is not running in this process`
      }
      if (verb === 'run' || verb === 'resume') {
        if (!operand)
          throw usageError('workflow', workflowUsage, `${verb} needs ${verb === 'run' ? 'a plan' : 'an id'}`)
        const running =
          verb === 'run'
            ? ctx.workflows.start(agent, operand, { origin: 'command' })
            : ctx.workflows.resume(agent, operand, { origin: 'command' })
        injectWhenDone(agent, running.done.then(formatWorkflow))
        return {
          text: `workflow ${running.workflowId} ${verb === 'run' ? 'started' : 'resumed'}`,
          data: { workflowId: running.workflowId },
        }
      }
      throw usageError('workflow', workflowUsage, `unknown argument "${verb}"`)
    },
  })
  ctx.commands.register({
    name: 'loop',
    description:
      'Repeat a task in fresh subagents until a check command passes (in the background); resume or list loops',
    usage: `${LOOP_USAGE} | resume <id> | list`,
    run(args, context) {
      const agent = requireAgent(context)
      const words = splitArgs(args)
      if (words.length === 1 && words[0] === 'list') return describeLoops(ctx.workflows.loops(agent.session))
      if (words.length === 2 && words[0] === 'resume') {
        const running = ctx.workflows.resumeLoop(agent, words[1] as string, { origin: 'command' })
        injectWhenDone(agent, running.done.then(formatLoop))
        return { text: `loop ${running.loopId} resumed`, data: { loopId: running.loopId } }
      }
      const parsed = parseLoopArgs(args)
      const running = ctx.workflows.startLoop(agent, {
        task: parsed.task,
        until: parsed.until,
        origin: 'command',
        ...(parsed.max !== undefined ? { maxIterations: parsed.max } : {}),
        ...(parsed.budget !== undefined ? { tokenBudget: parsed.budget } : {}),
      })
      injectWhenDone(agent, running.done.then(formatLoop))
      return {
        text: `loop ${running.loopId} started (cancel: /workflow cancel ${running.loopId})`,
        data: { loopId: running.loopId },
      }
    },
  })
}

export default {
  name: 'workflow-tools',
  inject: ['workflows', 'agents', 'tools'],
  apply(ctx: Context) {
    const parentOf = (agentId: string | undefined): Agent => {
      const parent = agentId === undefined ? undefined : ctx.agents.get(agentId)
      if (!parent) throw new ToolError('workflow tools run only inside an agent', 'WORKFLOW_NO_PARENT')
      return parent
    }

    const workflow = defineTool<{ plan?: unknown; resume?: string }>({
      name: 'workflow',
      deferred: true,
      description: [
        'Run a workflow: several subagent steps, with fan-out over a list and fan-in of the reports, and get the',
        "final step's report. Give either plan (a new workflow) or resume (the id of one that stopped: its",
        'completed tasks are reused and only the rest run).',
        PLAN_HELP,
      ].join('\n'),
      parameters: {
        type: 'object',
        properties: {
          plan: { type: 'object', description: 'The workflow plan.' },
          resume: { type: 'string', description: 'The id of a stopped workflow of this session.' },
        },
        additionalProperties: false,
      },
      presentation: (args) => ({
        kind: 'generic',
        title: 'Workflow',
        ...(args.resume ? { subtitle: `resume ${args.resume}` } : {}),
      }),
      async execute(args, call) {
        const parent = parentOf(call.agentId)
        if ((args.plan === undefined) === (args.resume === undefined)) {
          throw new ToolError('give exactly one of plan or resume', 'WORKFLOW_PLAN_INVALID')
        }
        const options = { origin: 'tool' as const, callId: call.callId, signal: call.signal }
        try {
          const running =
            args.resume !== undefined
              ? ctx.workflows.resume(parent, args.resume, options)
              : ctx.workflows.start(parent, args.plan, options)
          return formatWorkflow(await running.done)
        } catch (error) {
          asToolError(error)
        }
      },
    })

    const loop = defineTool<{
      task?: string
      until?: string
      max_iterations?: number
      token_budget?: number
      resume?: string
    }>({
      name: 'loop',
      deferred: true,
      description: [
        'Repeat a task in a fresh subagent until a check command passes: each attempt starts with an empty context',
        '(plus the failing check output of the previous attempt), then the check runs in the working directory.',
        'Stops when the check exits 0, after max_iterations (default 5), or once the attempts used token_budget tokens.',
        'resume (the id of a loop that stopped, e.g. interrupted by a restart) continues it after its last finished attempt.',
      ].join(' '),
      parameters: {
        type: 'object',
        properties: {
          task: { type: 'string', minLength: 1, description: 'The task, complete and self-contained.' },
          until: { type: 'string', minLength: 1, description: 'A shell command; exit 0 means done (e.g. "npm test").' },
          max_iterations: { type: 'integer', minimum: 1, maximum: 100 },
          token_budget: { type: 'integer', minimum: 1 },
          resume: {
            type: 'string',
            description: 'The id of a stopped loop of this session (instead of task and until).',
          },
        },
        additionalProperties: false,
      },
      presentation: (args) => ({
        kind: 'generic',
        title: 'Loop',
        subtitle: args.resume ? `resume ${args.resume}` : `until ${args.until ?? ''}`,
      }),
      async execute(args, call) {
        const parent = parentOf(call.agentId)
        if (args.resume !== undefined) {
          const options = { origin: 'tool' as const, callId: call.callId, signal: call.signal }
          try {
            return formatLoop(await ctx.workflows.resumeLoop(parent, args.resume, options).done)
          } catch (error) {
            asToolError(error)
          }
        }
        if (args.task === undefined || args.until === undefined) {
          throw new ToolError('give task and until (a new loop), or resume (the id of a stopped one)', 'LOOP_INVALID')
        }
        try {
          const running = ctx.workflows.startLoop(parent, {
            task: args.task,
            until: args.until,
            origin: 'tool',
            callId: call.callId,
            signal: call.signal,
            ...(args.max_iterations !== undefined ? { maxIterations: args.max_iterations } : {}),
            ...(args.token_budget !== undefined ? { tokenBudget: args.token_budget } : {}),
          })
          return formatLoop(await running.done)
        } catch (error) {
          asToolError(error)
        }
      },
    })

    ctx.tools.register(workflow)
    ctx.tools.register(loop)
    ctx.inject(['commands'], (inner) => registerCommands(inner))
  },
}
