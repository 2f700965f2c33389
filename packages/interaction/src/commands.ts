// `ctx.commands`: human slash commands (`/plan`, `/goal`, `/model`...) that run without a model turn.
// Packages register the commands they own; every surface sends a line that starts with `/` to
// `dispatch()` instead of queueing it as a message. Failures are outcomes, never throws.
import type { Agent, InboxReceipt } from '@dsh/agent'
import { type Context, HarnessError, type JsonValue, Service } from '@dsh/kernel'
import type { Session } from '@dsh/session'

/** What a command acts on: the surface's current session and, when one is live, its agent. */
export interface CommandTarget {
  session?: Session
  agent?: Agent
  signal?: AbortSignal
}

/** What `run` receives besides its argument text. */
export interface CommandContext extends CommandTarget {
  /** The command name, without the slash. */
  name: string
}

/** A command's return: text for the person, optionally data for surfaces. */
export type CommandReturn = string | { text: string; data?: JsonValue } | undefined

export interface CommandSpec {
  /** `^[a-z][a-z0-9-]{0,31}$`, without the slash. */
  name: string
  /** One line for `/help` and command pickers. */
  description: string
  /** Argument synopsis, e.g. `<provider:model>`. */
  usage?: string
  /** Throw `HarnessError` (its code is reported) or any error for a failure. */
  run(args: string, context: CommandContext): CommandReturn | Promise<CommandReturn>
}

/** The outcome of one dispatch. `ok: false` carries a stable `code` (`COMMAND_UNKNOWN`, ...). */
export interface CommandOutcome {
  ok: boolean
  name: string
  text: string
  code?: string
  data?: JsonValue
}

/** What `submit` did with a line. */
export type SubmitResult = { kind: 'command'; outcome: CommandOutcome } | { kind: 'message'; receipt: InboxReceipt }

export interface CommandInfo {
  name: string
  description: string
  usage?: string
}

declare module 'cordis' {
  interface Context {
    commands: CommandsService
  }
  interface Events {
    /** After each dispatch, with its outcome (surfaces show it; nothing durable by itself). */
    'commands/dispatched'(outcome: CommandOutcome, target: CommandTarget): void
  }
}

const NAME = /^[a-z][a-z0-9-]{0,31}$/

/**
 * A line that starts with `//` or `\\/` is a literal slash text for the model: returns it with the escape
 * taken off (`//tmp is full` -> `/tmp is full`); undefined for any other line.
 */
export function literalSlash(line: string): string | undefined {
  const text = line.trimStart()
  return text.startsWith('//') || text.startsWith('\\/') ? text.slice(1) : undefined
}

/** Splits `/name rest of line` into name and argument text; undefined when `line` is not a command. */
export function parseCommand(line: string): { name: string; args: string } | undefined {
  const match = /^\/([a-z][a-z0-9-]{0,31})(?:\s+([\s\S]*))?$/.exec(line.trim())
  if (!match?.[1]) return undefined
  return { name: match[1], args: (match[2] ?? '').trim() }
}

export class CommandsService extends Service {
  static readonly provide = 'commands'
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly registry = new Map<string, CommandSpec>()
  readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'commands')
    this.home = ctx
  }

  /**
   * Registers a command for the caller's lifetime. Throws `INVALID_COMMAND` for a bad name and
   * `DUPLICATE_COMMAND` for a name in use.
   */
  register(spec: CommandSpec): () => void {
    if (!NAME.test(spec.name)) {
      throw new HarnessError('INVALID_COMMAND', `command name "${spec.name}" must match ${NAME}`, { name: spec.name })
    }
    return this.ctx.effect(() => {
      if (this.registry.has(spec.name)) {
        throw new HarnessError('DUPLICATE_COMMAND', `command /${spec.name} is already registered`, { name: spec.name })
      }
      this.registry.set(spec.name, spec)
      return () => {
        if (this.registry.get(spec.name) === spec) this.registry.delete(spec.name)
      }
    }, `commands.register(${spec.name})`)
  }

  /** The registered commands, sorted by name. */
  list(): CommandInfo[] {
    return [...this.registry.values()]
      .map((spec) => ({ name: spec.name, description: spec.description, ...(spec.usage ? { usage: spec.usage } : {}) }))
      .sort((a, b) => (a.name < b.name ? -1 : 1))
  }

  /** Whether `line` is a slash command this registry knows. */
  isCommand(line: string): boolean {
    const parsed = parseCommand(line)
    return parsed !== undefined && this.registry.has(parsed.name)
  }

  /**
   * Whether a person's `line` goes to `dispatch()` rather than to the model: any `/word`, known or not
   * (an unknown one is answered `COMMAND_UNKNOWN` and nothing reaches the model). `//x` and `\\/x` are
   * literal text (`literalSlash`), never commands.
   */
  routesToCommand(line: string): boolean {
    return parseCommand(line) !== undefined
  }

  /**
   * Runs `/name args` against `target`. Never throws: an unknown command is `COMMAND_UNKNOWN`, a line
   * that is not a command `COMMAND_INVALID`, a failing command `ok: false` with its error's code (or
   * `COMMAND_FAILED`).
   */
  async dispatch(line: string, target: CommandTarget = {}): Promise<CommandOutcome> {
    const outcome = await this.execute(line, target)
    this.home.emit('commands/dispatched', outcome, target)
    return outcome
  }

  /**
   * A surface's single entry for a line a person typed: a /command is dispatched (no model turn; an
   * unknown one is refused), a `//` line is sent with one slash taken off; anything else is queued as a follow-up of `target.agent`. Throws `COMMAND_NEEDS_AGENT` for a
   * message with no agent to take it.
   */
  async submit(line: string, target: CommandTarget = {}): Promise<SubmitResult> {
    if (this.routesToCommand(line)) return { kind: 'command', outcome: await this.dispatch(line, target) }
    if (!target.agent) {
      throw new HarnessError('COMMAND_NEEDS_AGENT', 'a message needs a live agent to queue it', {})
    }
    return { kind: 'message', receipt: target.agent.followup(literalSlash(line) ?? line) }
  }

  private async execute(line: string, target: CommandTarget): Promise<CommandOutcome> {
    const parsed = parseCommand(line)
    if (!parsed) {
      return { ok: false, name: '', code: 'COMMAND_INVALID', text: `"${line.trim()}" is not a /command` }
    }
    const spec = this.registry.get(parsed.name)
    if (!spec) {
      return {
        ok: false,
        name: parsed.name,
        code: 'COMMAND_UNKNOWN',
        text: `unknown command /${parsed.name} (see /help); to send it to the model as text, start it with //`,
      }
    }
    try {
      const result = await spec.run(parsed.args, { ...target, name: parsed.name })
      if (result === undefined) return { ok: true, name: parsed.name, text: '' }
      if (typeof result === 'string') return { ok: true, name: parsed.name, text: result }
      return {
        ok: true,
        name: parsed.name,
        text: result.text,
        ...(result.data !== undefined ? { data: result.data } : {}),
      }
    } catch (error) {
      const code = error instanceof HarnessError ? error.code : 'COMMAND_FAILED'
      const text = error instanceof Error ? error.message : String(error)
      return { ok: false, name: parsed.name, code, text }
    }
  }
}

/** The `data.action` a successful outcome asks its surface for (`exit`, `new-session`), if any. */
export function commandAction(outcome: CommandOutcome): string | undefined {
  const data = outcome.ok ? outcome.data : undefined
  if (!data || typeof data !== 'object' || Array.isArray(data)) return undefined
  return typeof data.action === 'string' ? data.action : undefined
}

/** A `HarnessError` for a command used wrongly (`COMMAND_USAGE`), with the usage line. */
export function usageError(name: string, usage: string, detail?: string): HarnessError {
  return new HarnessError('COMMAND_USAGE', `${detail ? `${detail}; ` : ''}usage: /${name} ${usage}`, { name, usage })
}

/** Throws `COMMAND_NEEDS_SESSION` / `COMMAND_NEEDS_AGENT` when the surface gave no such target. */
export function requireSession(context: CommandContext): Session {
  if (!context.session) {
    throw new HarnessError('COMMAND_NEEDS_SESSION', `/${context.name} needs a current session`, { name: context.name })
  }
  return context.session
}

export function requireAgent(context: CommandContext): Agent {
  if (!context.agent) {
    throw new HarnessError('COMMAND_NEEDS_AGENT', `/${context.name} needs a live agent`, { name: context.name })
  }
  return context.agent
}

export default CommandsService
