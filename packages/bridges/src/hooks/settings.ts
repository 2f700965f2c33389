// Claude Code hooks settings: the `hooks` object of `.claude/settings.json` files and of the row config,
// validated into a flat list of command hooks with compiled matchers.
import { HarnessError } from '@dsh/kernel'
import { readConfigText } from '@dsh/settings'

/** The hook events the bridge maps (others in a settings file are ignored with a warning). */
export const HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'UserPromptSubmit', 'Stop'] as const
export type HookEvent = (typeof HOOK_EVENTS)[number]

/** The settings shape: `{ "<Event>": [{ "matcher"?: "Bash|Edit", "hooks": [{ "type": "command", "command", "timeout"? }] }] }`. */
export type HooksSettings = Partial<
  Record<string, { matcher?: string; hooks: { type: string; command: string; timeout?: number }[] }[]>
>

/** One runnable hook. */
export interface CommandHook {
  event: HookEvent
  /** The matcher as written (`*` when absent). */
  matcher: string
  command: string
  /** Seconds; undefined uses the bridge default. */
  timeout?: number
  /** Where it was configured: `config` or a settings file path. */
  source: string
  /** Whether the hook applies to a tool (always true for events without tools). */
  matches(toolNames: readonly string[]): boolean
}

function compileMatcher(matcher: string | undefined): (names: readonly string[]) => boolean {
  if (matcher === undefined || matcher === '' || matcher === '*') return () => true
  // Claude Code semantics: a plain name matches exactly; otherwise a regex over the whole name.
  const pattern = new RegExp(`^(?:${matcher})$`)
  return (names) => names.some((name) => pattern.test(name))
}

/**
 * Validates a `hooks` object. Returns the hooks and the problems found (unknown events, bad entries);
 * entries with problems are skipped.
 */
export function parseHooks(value: unknown, source: string): { hooks: CommandHook[]; problems: string[] } {
  const hooks: CommandHook[] = []
  const problems: string[] = []
  if (value === undefined) return { hooks, problems }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return { hooks, problems: [`${source}: hooks must be an object of event -> matcher groups`] }
  }
  for (const [event, groups] of Object.entries(value)) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      problems.push(`${source}: hook event "${event}" is not supported (${HOOK_EVENTS.join(', ')})`)
      continue
    }
    if (!Array.isArray(groups)) {
      problems.push(`${source}: hooks.${event} must be an array`)
      continue
    }
    groups.forEach((group: unknown, index) => {
      const where = `${source}: hooks.${event}[${index}]`
      const entry = group as { matcher?: unknown; hooks?: unknown } | null
      if (!entry || typeof entry !== 'object' || !Array.isArray(entry.hooks)) {
        problems.push(`${where} must be { matcher?, hooks: [...] }`)
        return
      }
      if (entry.matcher !== undefined && typeof entry.matcher !== 'string') {
        problems.push(`${where}.matcher must be a string`)
        return
      }
      let matches: (names: readonly string[]) => boolean
      try {
        matches = compileMatcher(entry.matcher as string | undefined)
      } catch (error) {
        problems.push(`${where}.matcher is not a valid regex: ${(error as Error).message}`)
        return
      }
      entry.hooks.forEach((hook: unknown, position) => {
        const item = hook as { type?: unknown; command?: unknown; timeout?: unknown } | null
        const at = `${where}.hooks[${position}]`
        if (item?.type !== 'command' || typeof item.command !== 'string' || item.command.trim() === '') {
          problems.push(`${at} must be { type: "command", command: string } (other hook types are not supported)`)
          return
        }
        if (item.timeout !== undefined && (typeof item.timeout !== 'number' || !(item.timeout > 0))) {
          problems.push(`${at}.timeout must be a positive number of seconds`)
          return
        }
        hooks.push({
          event: event as HookEvent,
          matcher: (entry.matcher as string | undefined) || '*',
          command: item.command,
          ...(item.timeout !== undefined ? { timeout: item.timeout as number } : {}),
          source,
          matches: event === 'PreToolUse' || event === 'PostToolUse' ? matches : () => true,
        })
      })
    })
  }
  return { hooks, problems }
}

/** Reads the `hooks` of one settings file. A missing file is no hooks; anything else wrong is a problem. */
export function readSettingsFile(path: string): { hooks: CommandHook[]; problems: string[] } {
  let text: string
  try {
    text = readConfigText(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { hooks: [], problems: [] }
    return { hooks: [], problems: [`${path}: ${(error as Error).message}`] }
  }
  try {
    return parseHooks((JSON.parse(text) as { hooks?: unknown })?.hooks, path)
  } catch (error) {
    return { hooks: [], problems: [`${path}: not JSON (${(error as Error).message})`] }
  }
}

/** Validates the row's own `hooks`: any problem throws `HOOKS_CONFIG_INVALID` (fail loud at load). */
export function parseRowHooks(value: unknown): CommandHook[] {
  const { hooks, problems } = parseHooks(value, 'config')
  if (problems.length > 0) {
    throw new HarnessError('HOOKS_CONFIG_INVALID', `hooks config: ${problems.join('; ')}`, { problems })
  }
  return hooks
}
