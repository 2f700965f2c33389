// /rewind, /undo and /redo. A files rewind, /undo and /redo act at once; a conversation rewind makes a
// new session the surface must switch to, so it answers `data.action: 'rewind'` and the surface calls
// the host's `session/rewind` (the terminal and the page open a picker for a bare /rewind).
import type { Context, JsonValue } from '@dsh/kernel'
import { type CommandReturn, requireAgent, requireSession, usageError } from '../commands.js'
import type { RewindPoint } from './log.js'
import type { FilesOutcome } from './service.js'

export const REWIND_MODES = ['both', 'files', 'conversation'] as const
export type RewindMode = (typeof REWIND_MODES)[number]

const USAGE = '[N [both|files|conversation] [overwrite]]'

/** One line per point: number, the message, what its turn changed. */
export function pointLine(point: RewindPoint): string {
  const text = point.text.replace(/\s+/g, ' ').trim()
  const excerpt = text.length > 60 ? `${text.slice(0, 59)}…` : text
  let files = point.snapshot ? '' : ' (no checkpoint: conversation only)'
  if (point.changed > 0) {
    const added = point.changes.reduce((sum, change) => sum + (change.added ?? 0), 0)
    const removed = point.changes.reduce((sum, change) => sum + (change.removed ?? 0), 0)
    files = ` · ${point.changed} file${point.changed === 1 ? '' : 's'} +${added} -${removed}`
  }
  return `${String(point.number).padStart(3)}. ${excerpt}${files}${point.undone ? ' (undone)' : ''}`
}

function outcomeData(outcome: FilesOutcome): JsonValue {
  return JSON.parse(JSON.stringify(outcome)) as JsonValue
}

function busy(agent: { phase: string } | undefined): string | undefined {
  return agent && agent.phase !== 'idle'
    ? 'a turn is running; stop it first (Esc), then rewind (files must not change under a running turn)'
    : undefined
}

export function registerRewindCommands(ctx: Context): void {
  ctx.commands.register({
    name: 'rewind',
    description: 'Go back to an earlier message: the conversation, the files, or both (lists them without N)',
    usage: USAGE,
    async run(args, context): Promise<CommandReturn> {
      const session = requireSession(context)
      const points = ctx.rewind.points(session)
      const words = args.split(/\s+/).filter(Boolean)
      if (words.length === 0) {
        if (points.length === 0)
          return { text: 'nothing to rewind to yet: no message in this session', data: { points: [] } }
        return {
          text: ['messages to rewind to (/rewind N [both|files|conversation]):', ...points.map(pointLine)].join('\n'),
          data: { points: JSON.parse(JSON.stringify(points)) as JsonValue },
        }
      }
      const number = Number(words[0])
      const mode = (words[1] ?? 'both') as RewindMode
      const overwrite = words[2] === 'overwrite' || words[1] === 'overwrite'
      const chosen = words[1] === 'overwrite' ? 'both' : mode
      if (!Number.isInteger(number) || number < 1 || !REWIND_MODES.includes(chosen) || words.length > 3)
        throw usageError('rewind', USAGE, `"${args}" is not a rewind`)
      const refusal = busy(context.agent)
      if (refusal) return { text: refusal, data: { refused: true } }
      const point = ctx.rewind.point(session, number)
      if (chosen === 'files') {
        const outcome = await ctx.rewind.files(session, point.number, { overwrite })
        return { text: outcome.text, data: outcomeData(outcome) }
      }
      return {
        text: `rewinding to message ${point.number} (${chosen})`,
        data: { action: 'rewind', point: point.number, mode: chosen, overwrite },
      }
    },
  })

  for (const kind of ['undo', 'redo'] as const) {
    ctx.commands.register({
      name: kind,
      description:
        kind === 'undo'
          ? "Take back the newest turn's file changes (the conversation stays)"
          : 'Give back what the last /undo or rewind took back',
      usage: '[overwrite]',
      async run(args, context): Promise<CommandReturn> {
        const agent = requireAgent(context)
        if (args && args !== 'overwrite') throw usageError(kind, '[overwrite]', `"${args}" is not a /${kind} option`)
        const refusal = busy(agent)
        if (refusal) return { text: refusal, data: { refused: true } }
        const options = { overwrite: args === 'overwrite' }
        const outcome =
          kind === 'undo'
            ? await ctx.rewind.undo(agent.session, options)
            : await ctx.rewind.redo(agent.session, options)
        return { text: outcome.text, data: outcomeData(outcome) }
      },
    })
  }
}
