// @dsh/coding-tools/bash: the `bash` tool over `ctx.shell`. Foreground calls run with a deadline and
// the call's abort signal; `run_in_background` hands the started process to `ctx.jobs`, which owns it
// from then on (this tool's unload does not stop it). A non-zero exit is a normal result with a status
// line; a sandbox denial adds the `[sandbox: ...]` line with the escalation route.
import type {} from '@dsh/agent/approval'
import type {} from '@dsh/agent/system-prompt'
import { defineTool, type ToolCallContext, ToolError } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import { directService, HarnessError } from '@dsh/kernel'
import type { JobOwner, JobProducer } from '@dsh/world/jobs'
import { sandboxDenialHint } from '@dsh/world/sandbox'
import { type Shell, type ShellProcess, statusMarkers } from '@dsh/world/shell'
import {
  callPolicy,
  description,
  ESCALATION_PROPERTIES,
  type EscalationArgs,
  effectivePolicy,
  workspaceOf,
} from './shared.js'

export const name = 'coding-tools-bash'
export const inject = ['tools', 'shell']

export interface BashToolConfig {
  /** Largest `timeout` the model may ask for (ms). Default 600000. */
  maxTimeoutMs?: number
  /**
   * When the sandbox is unusable here (no bwrap, no user namespaces): `ask` the user before each
   * command, which then runs unconfined for that one call (headless: `--yes`), or `refuse` every
   * confined command. Default `ask`.
   */
  unsandboxed?: 'ask' | 'refuse'
}

interface BashArgs extends EscalationArgs {
  command: string
  description?: string
  timeout?: number
  run_in_background?: boolean
}

/** Adapts a started shell process to a job producer (the registry reads, cancels and awaits it). */
export function shellJob(process: ShellProcess): JobProducer {
  return {
    read: (start, max) => process.handle.read(start, max),
    totalBytes: () => process.handle.output().totalBytes,
    done: process.done.then((result) => ({
      status: result.exitCode === 0 ? 'completed' : 'failed',
      summary:
        result.exitCode !== null
          ? `exit code ${result.exitCode}`
          : result.signal
            ? `killed by ${result.signal}`
            : 'ended',
    })),
    cancel: () => process.terminate(),
  }
}

export function apply(ctx: Context, config: BashToolConfig = {}): void {
  const maxTimeout = config?.maxTimeoutMs ?? 600_000
  const tool = defineTool<BashArgs>({
    name: 'bash',
    description: description('bash'),
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The command line, run with bash -c.' },
        description: { type: 'string', description: 'What the command does, in 5-10 words.' },
        timeout: {
          type: 'integer',
          minimum: 1,
          maximum: maxTimeout,
          description: `Milliseconds (default 120000, max ${maxTimeout}).`,
        },
        run_in_background: { type: 'boolean', description: 'Start as a background job and return its id at once.' },
        ...ESCALATION_PROPERTIES,
      },
      required: ['command'],
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'terminal', title: args.description ?? 'Run command', command: args.command }),
    async execute(args, call) {
      const shell = ctx.shell
      if (args.sandbox_permissions !== undefined && !shell.confines) {
        throw new ToolError(
          '[escalation refused] this shell is not sandboxed: omit sandbox_permissions.',
          'SANDBOX_ESCALATION_INVALID',
        )
      }
      const policy =
        (await callPolicy(ctx, call, args, `Run \`${args.command}\` with wider sandbox permissions`)) ??
        (config?.unsandboxed === 'refuse' ? undefined : await unsandboxedPolicy(ctx, call, args.command))
      const workdir = workspaceOf(ctx, call)
      const request = {
        command: args.command,
        ...(workdir === undefined ? {} : { workdir }),
        ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId, env: { DSH_SESSION_ID: call.sessionId } }),
        ...(policy ? { policy } : {}),
      }
      if (args.run_in_background) {
        const jobs = ctx.get('jobs')
        if (!jobs)
          throw new ToolError(
            'Background jobs are not available here: run the command in the foreground.',
            'JOBS_UNAVAILABLE',
          )
        const owner: JobOwner = {
          ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
          ...(call.agentId === undefined ? {} : { agentId: call.agentId }),
        }
        try {
          // Started through the jobs service's context: the job, not this tool, owns the process.
          const job = await jobs.start({
            owner,
            kind: 'bash',
            title: args.command,
            start: async (registry) => {
              const target = registry.get('shell') ?? shell
              return shellJob(await target.start(target.resolve(request)))
            },
          })
          return `Started ${job.id} in the background: ${args.command}\nRead its output with job_output (job_id "${job.id}"); stop it with job_kill. You will be notified when it finishes.`
        } catch (error) {
          return failure(error)
        }
      }
      let spec: ReturnType<Shell['resolve']>
      let result: Awaited<ReturnType<Shell['run']>>
      try {
        spec = shell.resolve({ ...request, signal: call.signal, ...(args.timeout ? { timeoutMs: args.timeout } : {}) })
        result = await shell.run(spec)
      } catch (error) {
        return failure(error)
      }
      const lines = [result.output.text === '' ? '(no output)' : result.output.text.replace(/\n$/, '')]
      lines.push(...statusMarkers(result, spec.timeoutMs))
      if (result.sandboxDenied) {
        const effective = spec.policy ?? effectivePolicy(ctx, call, policy)
        if (effective) lines.push(sandboxDenialHint(effective))
      }
      return {
        content: lines.join('\n'),
        details: {
          exitCode: result.exitCode,
          timedOut: result.timedOut,
          aborted: result.aborted,
          sandboxDenied: result.sandboxDenied,
          durationMs: result.durationMs,
          ...(result.output.spillPath ? { outputPath: result.output.spillPath } : {}),
        },
      }
    },
  })
  ctx.tools.register(tool)

  // The model learns its sandbox from a dynamic prompt section: the loop logs it whenever it changes.
  const prompt = ctx.get('systemPrompt')
  const policies = ctx.get('sandboxPolicy')
  if (prompt && policies && ctx.shell.confines) {
    // Rendered before every request: the provider's own object, not Cordis's per-call proxies (decision 351).
    const direct = directService(ctx, 'sandboxPolicy')
    prompt.register({
      name: 'sandbox',
      kind: 'dynamic',
      order: 900,
      render: (scope) => {
        const policy = (direct() ?? policies).resolve(scope.sessionId)
        // A remote execution world: say which machine the tools act on before anything else.
        const where = policy.location
          ? ` Every tool (bash, the file tools, background jobs) runs ${policy.location}; all paths are that machine's.`
          : ''
        if (policy.mode === 'danger-full-access')
          return `Sandbox: danger-full-access (commands and file tools may write anywhere; network on).${where}`
        const roots = policy.writableRoots.length ? policy.writableRoots.join(', ') : 'nothing (read-only)'
        const network = policy.network === 'off' ? 'Network: off (commands cannot reach any host).' : 'Network: on.'
        const secrets = policy.secretPaths.length
          ? ` Credential stores are hidden from bash and refused by the file tools: ${policy.secretPaths.join(', ')}.`
          : ''
        return `Sandbox: ${policy.mode}.${where} bash and the file tools may write only to: ${roots}. A write elsewhere fails with a [sandbox: denied ...] line; retry with sandbox_permissions only if it is really needed. ${network}${secrets}`
      },
    })
  }
}

/**
 * The approval-gated fallback: when this machine cannot confine the session's mode, asks the user
 * (kind `unsandboxed`) for this one command and returns a danger-full-access policy for it, or throws
 * the refusal. Undefined when the sandbox is usable (or the mode confines nothing).
 */
async function unsandboxedPolicy(ctx: Context, call: ToolCallContext, command: string) {
  const sandbox = ctx.get('sandbox')
  const policies = ctx.get('sandboxPolicy')
  if (!sandbox || !policies || !ctx.shell.confines) return undefined
  const current = policies.resolve(call.sessionId)
  if (current.mode === 'danger-full-access') return undefined
  const available = await sandbox.availability()
  if (available.usable) return undefined
  const approval = ctx.get('approval')
  const decision = approval
    ? await approval.request(
        {
          ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
          toolCallId: call.callId,
          toolName: call.toolName,
          kind: 'unsandboxed',
          summary: `Run without a sandbox: ${command}`,
          reason: `no sandbox is usable here: ${available.detail}`,
          details: { mode: current.mode, detail: available.detail },
        },
        call.signal,
      )
    : 'unavailable'
  if (decision !== 'allowed-once') {
    throw new ToolError(
      `[sandbox unavailable: ${available.detail}] The command was not run: without a sandbox each command needs the user's approval (${decision}). Headless: rerun with --yes, or choose --permission-mode danger-full-access.`,
      'SANDBOX_UNAVAILABLE',
    )
  }
  return Object.freeze({ ...policies.resolve(call.sessionId, 'danger-full-access'), escalatedFrom: current.mode })
}

function failure(error: unknown): never {
  if (HarnessError.is(error, 'SANDBOX_UNAVAILABLE')) {
    throw new ToolError(`[sandbox unavailable: ${error.message}] The command was not run.`, error.code)
  }
  if (HarnessError.is(error, 'JOBS_CAPACITY')) throw new ToolError(error.message, error.code)
  if (HarnessError.is(error, 'SUBPROCESS_SPAWN_FAILED'))
    throw new ToolError(`The command could not start: ${error.message}`, error.code)
  throw error
}

/** The plugin (bundle rows use this default export). */
export default { name, inject, apply }
