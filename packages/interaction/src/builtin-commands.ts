// The built-in commands that belong to no capability package: /help, /model, /permissions, /fork,
// /compact, and the habitual ones (./session-commands.ts: /exit /quit /clear /new /status /mcp /init;
// ./diff-command.ts: /diff; ./cost-command.ts: /cost). (/plan and /goal are registered by @dsh/interaction/work-state, next to the state they change.)
// Optional services (`ctx.approval`, `ctx.sandboxPolicy`, `ctx.compaction`) are looked up per call.
import type {} from '@dsh/agent/approval'
import type {} from '@dsh/agent/approval/permissions'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/llm'
import type { Session } from '@dsh/session'
import { type CommandContext, requireAgent, requireSession, usageError } from './commands.js'
import { registerCostCommand } from './cost-command.js'
import { registerDiffCommand } from './diff-command.js'
import { checkModel, currentModel, selectModel, usableModels } from './model-choice.js'
import { registerSessionCommands } from './session-commands.js'
import { registerUsageCommand } from './usage-command.js'

/** The part of `ctx.compaction` /compact needs (the service is another package's seam). */
interface CompactionLike {
  compact(
    session: Session,
    options?: { trigger?: 'manual'; signal?: AbortSignal },
  ): Promise<{ ok: boolean; code?: string; message?: string; start?: number; end?: number; summarySeq?: number }>
}

/** The part of `ctx.sandboxPolicy` /permissions needs. */
interface SandboxPolicyLike {
  mode(sessionId?: string): string
  setMode(sessionId: string, mode: string): string
  presets(): Readonly<Record<string, { mode: string; approval: string }>>
}

function optional<T>(ctx: Context, name: string): T | undefined {
  return (ctx.get as (name: string) => unknown)(name) as T | undefined
}

/** The seq where a session's last closed turn ends (the whole log when no turn is open). */
function closedBoundary(session: Session): number {
  if (session.openTail().turn === undefined) return session.length - 1
  for (let seq = session.length - 1; seq >= 0; seq--) if (session.events[seq]?.type === 'turn/end') return seq
  return -1
}

export default {
  name: 'builtin-commands',
  inject: ['commands', 'sessions'],
  apply(ctx: Context) {
    ctx.commands.register({
      name: 'help',
      description: 'List the commands',
      run: () =>
        [
          ...ctx.commands
            .list()
            .map((command) => `/${command.name}${command.usage ? ` ${command.usage}` : ''}  ${command.description}`),
          'Start a line with // to send a text that begins with a slash to the model.',
        ].join('\n'),
    })
    registerSessionCommands(ctx)
    registerDiffCommand(ctx)
    registerCostCommand(ctx)
    registerUsageCommand(ctx)

    ctx.sessions.defineEvent('model/selected')
    ctx.commands.register({
      name: 'model',
      description: "Show the session's model and the usable ones, or change it (logged; kept on resume)",
      usage: '[provider:model | model]',
      async run(args, context) {
        const agent = requireAgent(context)
        if (!args) {
          const usable = await usableModels(ctx)
          const current = currentModel(ctx, agent)
          const lines = [`model: ${current}`]
          if (usable.length === 0) lines.push('no usable models: add a key (dsh models --all, dsh doctor)')
          else
            lines.push(
              'usable models (/model NAME):',
              ...usable.map((name) => `${name === current ? '*' : ' '} ${name}`),
            )
          return { text: lines.join('\n'), data: { model: current, usable } }
        }
        if (/\s/.test(args)) throw usageError('model', '[provider:model | model]', `"${args}" is not a model name`)
        const colon = args.indexOf(':')
        const named = colon > 0 ? { provider: args.slice(0, colon), model: args.slice(colon + 1) } : { model: args }
        if (!named.model) throw usageError('model', '[provider:model | model]', 'the model name is empty')
        const provider = named.provider ?? agent.model.provider ?? ctx.get('llm')?.resolveCall({}).provider
        if (provider) await checkModel(ctx, { provider, model: named.model })
        // Logged, and the agent's from its next request; each request/header records the model used.
        selectModel(agent, { ...(provider ? { provider } : {}), model: named.model })
        return { text: `model: ${currentModel(ctx, agent)} (from the next request)`, data: { ...agent.model } as never }
      },
    })

    ctx.commands.register({
      name: 'permissions',
      description: 'Show or change the permission mode and rules (allow/ask/deny RULE, remove RULE)',
      usage: '[preset | mode | ask | never | allow RULE | ask RULE | deny RULE | remove RULE]',
      run(args, context) {
        const session = requireSession(context)
        const rules = ctx.get('permissions')
        const edit = /^(allow|ask|deny|remove)\s+(\S.*)$/.exec(args.trim())
        if (edit) {
          if (!rules) throw usageError('permissions', 'allow|ask|deny|remove RULE', 'the permissions row is not loaded')
          const [, verb, rule] = edit as unknown as [string, 'allow' | 'ask' | 'deny' | 'remove', string]
          if (verb === 'remove') return rules.remove(rule) ? `removed ${rule}` : `${rule} is not in your settings`
          const added = rules.add(verb, rule)
          return `${verb} ${added.text} (saved in ${added.source})`
        }
        const sandbox = optional<SandboxPolicyLike>(ctx, 'sandboxPolicy')
        const approval = ctx.get('approval')
        if (args) {
          if (sandbox && !['ask', 'never'].includes(args)) sandbox.setMode(session.id, args)
          else if (approval && ['ask', 'never'].includes(args)) approval.setPolicy(session.id, args as 'ask' | 'never')
          else throw usageError('permissions', '[preset | mode | ask | never]', `cannot set "${args}" here`)
        }
        const parts: string[] = []
        if (sandbox) {
          parts.push(`sandbox: ${sandbox.mode(session.id)}`)
          parts.push(`presets: ${Object.keys(sandbox.presets()).join(', ')}`)
        }
        if (approval) parts.push(`approval: ${approval.policy(session.id)}`)
        if (rules) {
          const all = rules.rules()
          parts.push(
            all.length === 0
              ? 'rules: none (add one: /permissions allow Bash(npm test:*))'
              : 'rules (deny wins, then ask, then allow):',
          )
          for (const rule of all) parts.push(`  ${rule.effect} ${rule.text}  (${rule.source})`)
        }
        return parts.join('\n') || 'no permission services are active'
      },
    })

    ctx.commands.register({
      name: 'fork',
      description: 'Fork the session at its last closed turn into a new session',
      run: async (_args, context: CommandContext) => {
        const session = requireSession(context)
        const child = ctx.sessions.fork(session, closedBoundary(session))
        const durable = await ctx.sessions.flush(child)
        // A durable fork is closed here (a surface resumes it by id); without persistence it stays live.
        if (durable) ctx.sessions.close(child)
        return {
          text: `forked ${session.id} into ${child.id}${durable ? '' : ' (not durable: no persistence row)'}`,
          data: { sessionId: child.id, parentSession: session.id, durable },
        }
      },
    })

    ctx.commands.register({
      name: 'compact',
      description: 'Summarise older conversation into one message to free context',
      run: async (_args, context) => {
        const session = requireSession(context)
        const compaction = optional<CompactionLike>(ctx, 'compaction')
        if (!compaction) {
          throw new HarnessError('COMMAND_UNAVAILABLE', '/compact is not available: no compaction row is active', {
            name: 'compact',
          })
        }
        const result = await compaction.compact(session, {
          trigger: 'manual',
          ...(context.signal ? { signal: context.signal } : {}),
        })
        if (!result.ok) {
          throw new HarnessError(result.code ?? 'COMPACTION_FAILED', result.message ?? 'compaction failed', {
            name: 'compact',
          })
        }
        return {
          text: compactedText(result.start, result.end),
          data: { start: result.start ?? null, end: result.end ?? null, summarySeq: result.summarySeq ?? null },
        }
      },
    })
  },
}

/** What `/compact` did, in the user's words: how many earlier messages became one summary. */
function compactedText(start: number | undefined, end: number | undefined): string {
  if (start === undefined || end === undefined) return 'compacted the earlier conversation into a summary'
  const count = end - start + 1
  return `compacted ${count} earlier message${count === 1 ? '' : 's'} into a summary`
}
