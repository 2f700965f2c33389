// @dsh/bridges/hooks: a bridge for Claude Code hooks settings. Command hooks from `.claude/settings*.json`,
// `~/.claude/settings.json` and the row config run on the dsh extension points: PreToolUse on
// `tools/pre-execute`, PostToolUse on `tools/post-execute`, UserPromptSubmit on `agent/pre-step` (first
// step), Stop on `agent/turn-stopping`. A hook never has more power than a native plugin: it can deny,
// ask, block, add context or stop, never loosen another policy or rewrite arguments and results.
// Every run is logged as a `hook/run` session event.
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { PreStepDecision, TurnContinuation } from '@dsh/agent'
import type { ToolOutcome, ToolPreExecuteDecision } from '@dsh/agent/tools'
import type {} from '@dsh/composition'
import { type Context, directService } from '@dsh/kernel'
import type { UserMessage } from '@dsh/llm'
import type { Session } from '@dsh/session'
import { projectTrust } from '@dsh/settings/trust'
import { type HookProcessResult, runHook } from './run.js'
import { type CommandHook, type HookEvent, type HooksSettings, parseRowHooks, readSettingsFile } from './settings.js'

export type { HookJsonOutput, HookProcessResult } from './run.js'
export type { CommandHook, HookEvent, HooksSettings } from './settings.js'
export { HOOK_EVENTS, parseHooks, parseRowHooks } from './settings.js'

export interface HooksConfig {
  /** Hooks of the row itself (the settings `hooks` shape). */
  hooks?: HooksSettings
  /** Project directory: `.claude/settings.json` and `.claude/settings.local.json` are read from it. */
  cwd?: string
  /** Read the project's `.claude/settings*.json`. Default true. */
  project?: boolean
  /** Read `~/.claude/settings.json` (`true`), another file (a path), or not (`false`). Default true. */
  user?: boolean | string
  /** Default per-hook timeout in seconds (a hook's own `timeout` wins). Default 60. */
  timeout?: number
  /** Bound of stdout/stderr kept in `hook/run` events and fed to the model. Default 4,000 characters. */
  maxOutputChars?: number
  /** Stop-hook continuations allowed per turn (loop guard). Default 5. */
  maxStopContinuations?: number
}

/** The durable record of one hook run. */
export interface HookRunEvent {
  event: HookEvent
  command: string
  matcher: string
  source: string
  toolName?: string
  toolCallId?: string
  exitCode: number | null
  signal?: string
  timedOut: boolean
  durationMs: number
  /** What the bridge did with it. */
  decision: 'none' | 'allow' | 'deny' | 'ask' | 'block' | 'stop' | 'error'
  reason?: string
  stdout?: string
  stderr?: string
  /** Output fields the bridge read but does not apply (e.g. `updatedInput`). */
  ignored?: string[]
}

declare module '@dsh/session' {
  interface SessionEventMap {
    'hook/run': HookRunEvent
  }
}

/** Claude Code tool names of dsh's built-in tools, so `Bash` / `Edit|Write` matchers work as written. */
const CLAUDE_NAMES: Record<string, string> = {
  bash: 'Bash',
  read: 'Read',
  write: 'Write',
  edit: 'Edit',
  glob: 'Glob',
  grep: 'Grep',
  ls: 'LS',
  web_fetch: 'WebFetch',
  web_search: 'WebSearch',
}

type Verdict = Exclude<HookRunEvent['decision'], 'error'>

interface Interpreted {
  decision: Verdict
  /** Text for the model (block/deny reasons, additional context). */
  reason?: string
  context?: string
  stop?: string
}

function bound(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}\n[${text.length - max} more characters]` : text
}

/** The Claude Code reading of one run, per event. */
function interpret(event: HookEvent, run: HookProcessResult): Interpreted {
  const json = run.json
  const stderr = run.stderr.trim()
  const specific = json?.hookSpecificOutput
  const context = specific?.additionalContext
  if (json?.continue === false) {
    return { decision: 'stop', stop: json.stopReason ?? 'a hook stopped the agent', reason: json.stopReason }
  }
  if (run.exitCode === 2)
    return {
      decision: event === 'PostToolUse' ? 'block' : event === 'PreToolUse' ? 'deny' : 'block',
      reason: stderr || 'blocked by a hook',
    }
  if (run.exitCode !== 0) return { decision: 'none' }
  if (event === 'PreToolUse') {
    const permission =
      specific?.permissionDecision ??
      (json?.decision === 'block' ? 'deny' : json?.decision === 'approve' ? 'allow' : undefined)
    const reason = specific?.permissionDecisionReason ?? json?.reason
    if (permission === 'deny' || permission === 'ask' || permission === 'allow') {
      return { decision: permission, ...(reason ? { reason } : {}) }
    }
    return { decision: 'none' }
  }
  if (json?.decision === 'block')
    return { decision: 'block', reason: json.reason ?? 'blocked by a hook', ...(context ? { context } : {}) }
  if (event === 'UserPromptSubmit' && !json && run.stdout.trim() !== '')
    return { decision: 'none', context: run.stdout.trim() }
  return { decision: 'none', ...(context ? { context } : {}) }
}

const RANK: Record<Verdict, number> = { none: 0, allow: 1, ask: 2, block: 3, deny: 3, stop: 4 }

/**
 * The bridge plugin (row `@dsh/bridges/hooks`). Reads settings once at activation; a broken settings file is a
 * warning, a broken row config throws `HOOKS_CONFIG_INVALID`.
 */
export const HooksBridge = {
  name: 'hooks',
  inject: ['sessions'],
  apply(ctx: Context, config: HooksConfig = {}) {
    config ??= {}
    const rowHooks = parseRowHooks(config.hooks)
    const cwd = config.cwd ?? ctx.get('launcher')?.config.cwd ?? process.cwd()
    const files: string[] = []
    if (config.user !== false)
      files.push(typeof config.user === 'string' ? config.user : join(homedir(), '.claude', 'settings.json'))
    if (config.project !== false) {
      // A checkout's hooks are shell commands of its author: they run only in a trusted folder.
      for (const name of ['settings.json', 'settings.local.json']) {
        const file = join(cwd, '.claude', name)
        if (!existsSync(file)) continue
        if (projectTrust(ctx).admits(cwd, `.claude/${name}`)) files.push(file)
        else
          ctx
            .logger('hooks')
            .warn(
              `${file} not loaded: this folder is not trusted (or the file changed since); review it, then run \`dsh trust\``,
            )
      }
    }
    const hooks: CommandHook[] = [...rowHooks]
    for (const file of files) {
      const read = readSettingsFile(file)
      for (const problem of read.problems) ctx.logger('hooks').warn(problem)
      hooks.push(...read.hooks)
    }
    const defaultTimeout = (config.timeout ?? 60) * 1000
    const maxOutput = config.maxOutputChars ?? 4000
    const maxStops = config.maxStopContinuations ?? 5
    const running = new Set<() => void>()
    const stopRequested = new Map<string, string>()
    const stopCount = new Map<string, number>()

    ctx.sessions.defineEvent('hook/run')
    ctx.effect(
      () => () => {
        for (const kill of running) kill()
        running.clear()
      },
      'hooks.processes',
    )

    const track = (kill: () => void) => {
      running.add(kill)
      return () => running.delete(kill)
    }

    /** Runs every matching hook of an event in parallel (identical commands once), logs each, merges. */
    async function fire(
      event: HookEvent,
      session: Session | undefined,
      payload: Record<string, unknown>,
      tool?: { name: string; callId: string },
      signal?: AbortSignal,
    ): Promise<Interpreted & { contexts: string[] }> {
      const names = tool ? [tool.name, ...(CLAUDE_NAMES[tool.name] ? [CLAUDE_NAMES[tool.name] as string] : [])] : []
      const seen = new Set<string>()
      const selected = hooks.filter((hook) => {
        if (hook.event !== event || !hook.matches(names) || seen.has(hook.command)) return false
        seen.add(hook.command)
        return true
      })
      const merged: Interpreted & { contexts: string[] } = { decision: 'none', contexts: [] }
      if (selected.length === 0) return merged
      const input = {
        session_id: session?.id ?? '',
        transcript_path: session?.location ?? '',
        cwd: session?.header.cwd ?? cwd,
        permission_mode: 'default',
        hook_event_name: event,
        ...payload,
      }
      const env = { ...process.env, CLAUDE_PROJECT_DIR: cwd, DSH_PROJECT_DIR: cwd }
      const runs = await Promise.all(
        selected.map(async (hook) => {
          const run = await runHook(hook.command, input, {
            cwd: session?.header.cwd ?? cwd,
            env,
            timeoutMs: hook.timeout !== undefined ? hook.timeout * 1000 : defaultTimeout,
            track,
            ...(signal ? { signal } : {}),
          })
          return { hook, run }
        }),
      )
      for (const { hook, run } of runs) {
        const failed = run.error !== undefined || run.timedOut || (run.exitCode !== 0 && run.exitCode !== 2)
        const verdict = failed ? { decision: 'none' as const } : interpret(event, run)
        if (failed)
          ctx
            .logger('hooks')
            .warn(
              '%s hook "%s" failed: %s',
              event,
              hook.command,
              run.error ?? (run.timedOut ? 'timed out' : `exit ${run.exitCode}: ${run.stderr.trim()}`),
            )
        const ignored = run.json?.hookSpecificOutput?.updatedInput !== undefined ? ['updatedInput'] : []
        const record: HookRunEvent = {
          event,
          command: hook.command,
          matcher: hook.matcher,
          source: hook.source,
          ...(tool ? { toolName: tool.name, toolCallId: tool.callId } : {}),
          exitCode: run.exitCode,
          ...(run.signal ? { signal: run.signal } : {}),
          timedOut: run.timedOut,
          durationMs: run.durationMs,
          decision: failed ? 'error' : verdict.decision,
          ...(verdict.reason ? { reason: bound(verdict.reason, maxOutput) } : {}),
          ...(run.stdout ? { stdout: bound(run.stdout, maxOutput) } : {}),
          ...(run.stderr || run.error ? { stderr: bound(run.stderr || run.error || '', maxOutput) } : {}),
          ...(ignored.length > 0 ? { ignored } : {}),
        }
        session?.append('hook/run', record, { ignorable: true })
        if (verdict.context) merged.contexts.push(bound(verdict.context, maxOutput))
        if (RANK[verdict.decision] > RANK[merged.decision]) {
          merged.decision = verdict.decision
          if (verdict.reason) merged.reason = bound(verdict.reason, maxOutput)
          else delete merged.reason
        }
        if (verdict.stop !== undefined) merged.stop ??= verdict.stop
      }
      return merged
    }

    const sessions = directService(ctx, 'sessions')
    const sessionOf = (id: string | undefined) => (id === undefined ? undefined : (sessions() ?? ctx.sessions).get(id))

    // PreToolUse: deny or ask on top of the native decision; never loosens it.
    ctx.on('tools/pre-execute', async (call, next): Promise<ToolPreExecuteDecision> => {
      const native = await next()
      if (native.action === 'deny') return native
      const session = sessionOf(call.sessionId)
      const result = await fire(
        'PreToolUse',
        session,
        { tool_name: CLAUDE_NAMES[call.toolName] ?? call.toolName, tool_input: call.args, tool_use_id: call.callId },
        { name: call.toolName, callId: call.callId },
      )
      if (result.stop !== undefined) {
        if (call.sessionId) stopRequested.set(call.sessionId, result.stop)
        return { action: 'deny', reason: `stopped by a hook: ${result.stop}` }
      }
      if (result.decision === 'deny')
        return { action: 'deny', reason: `blocked by a PreToolUse hook: ${result.reason ?? ''}`.trim() }
      if (result.decision === 'ask' && native.action === 'allow') {
        return {
          action: 'ask',
          ...(result.reason ? { reason: result.reason } : {}),
          ...(native.args ? { args: native.args } : {}),
        }
      }
      return native
    })

    // PostToolUse: feedback as additional context; the result itself is never rewritten.
    ctx.on('tools/post-execute', async (execution, next): Promise<ToolOutcome> => {
      const outcome = await next()
      const session = sessionOf(execution.sessionId)
      const response = outcome.content
        .map((block) => (block.type === 'text' ? block.text : `[${block.type}]`))
        .join('\n')
      const result = await fire(
        'PostToolUse',
        session,
        {
          tool_name: CLAUDE_NAMES[execution.toolName] ?? execution.toolName,
          tool_input: execution.args,
          tool_response: { content: response, isError: outcome.isError },
          tool_use_id: execution.callId,
        },
        { name: execution.toolName, callId: execution.callId },
        execution.signal,
      )
      const extra = [...result.contexts]
      if (result.decision === 'block' && result.reason) extra.unshift(`PostToolUse hook feedback: ${result.reason}`)
      if (result.stop !== undefined) {
        if (execution.sessionId) stopRequested.set(execution.sessionId, result.stop)
        extra.push(`A hook stopped the agent: ${result.stop}`)
      }
      return extra.length === 0 ? outcome : { ...outcome, additionalContext: [...outcome.additionalContext, ...extra] }
    })

    // UserPromptSubmit whenever a step enters what a person typed (followups, sends, steers; not
    // injected context or turn-stopping continuations); also ends a turn a hook asked to stop.
    ctx.on('agent/pre-step', async (input, next): Promise<PreStepDecision> => {
      const stop = stopRequested.get(input.session.id)
      if (stop !== undefined) {
        stopRequested.delete(input.session.id)
        return { action: 'reject', reason: `stopped by a hook: ${stop}` }
      }
      if (input.first) stopCount.delete(input.session.id)
      const decision = await next()
      const typed = input.items.filter(
        (item) => item.kind === 'followup' || item.kind === 'send' || item.kind === 'steer',
      )
      if (decision.action !== 'enter' || typed.length === 0) return decision
      const prompt = typed
        .flatMap((item) => item.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])))
        .join('\n')
      const result = await fire('UserPromptSubmit', input.session, { prompt })
      if (result.stop !== undefined) return { action: 'reject', reason: `stopped by a hook: ${result.stop}` }
      if (result.decision === 'block')
        return { action: 'reject', reason: `prompt blocked by a hook: ${result.reason ?? ''}`.trim() }
      if (result.contexts.length === 0) return decision
      const context: UserMessage = { role: 'user', content: [{ type: 'text', text: result.contexts.join('\n') }] }
      return { action: 'enter', messages: [...decision.messages, context] }
    })

    // Stop: a block keeps the turn going with the reason (bounded per turn); continue:false ends it.
    ctx.on('agent/turn-stopping', async (state): Promise<TurnContinuation | undefined> => {
      if (state.reason !== 'completed') return undefined
      const id = state.session.id
      const count = stopCount.get(id) ?? 0
      const result = await fire('Stop', state.session, { stop_hook_active: count > 0 })
      if (result.stop !== undefined || result.decision !== 'block') return undefined
      if (count >= maxStops) {
        ctx.logger('hooks').warn('Stop hooks kept session %s going %d times; letting the turn end', id, count)
        return undefined
      }
      stopCount.set(id, count + 1)
      return {
        continue: true,
        message: {
          role: 'user',
          content: [{ type: 'text', text: `Stop hook feedback: ${result.reason ?? 'keep going'}` }],
        },
      }
    })
  },
}

export default HooksBridge
