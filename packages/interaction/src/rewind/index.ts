// @dsh/interaction/rewind: checkpoints around every turn and the way back (issue 32). The row takes a
// workspace snapshot (`ctx.snapshots`, optional) before a turn's first step and after its last one,
// logs both, and offers `ctx.rewind` (files, conversation, /undo, /redo, diff since a message) with
// the /rewind, /undo and /redo commands. The `checkpoints` setting turns snapshots off; without a
// snapshots provider (the SSH world) only the conversation can be rewound.
import type {} from '@dsh/agent'
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/settings'
import { registerRewindCommands } from './commands.js'
import { type RewindConfig, RewindService } from './service.js'

export { pointLine, REWIND_MODES, type RewindMode } from './commands.js'
export type {
  CheckpointTaken,
  CheckpointUnavailable,
  RewindApplied,
  RewindInterrupted,
  RewindKind,
  RewindPoint,
  RewindStarted,
} from './log.js'
export { rewindPoints } from './log.js'
export type { ConversationFork, FilesOutcome, RewindConfig } from './service.js'
export { RewindService }

declare module '@dsh/settings' {
  interface SettingsMap {
    /** Workspace checkpoints before and after each turn (what rewind, /undo and /redo restore). */
    checkpoints: boolean | 'on' | 'off'
  }
}

export const name = 'rewind'
export const inject = ['sessions', 'commands']

export function apply(ctx: Context, config: RewindConfig = {}): void {
  for (const type of [
    'checkpoint/taken',
    'checkpoint/unavailable',
    'rewind/started',
    'rewind/applied',
    'rewind/interrupted',
  ] as const)
    ctx.sessions.defineEvent(type)
  ctx.inject(['settings'], (inner) => {
    inner.settings.define('checkpoints', {
      schema: { enum: [true, false, 'on', 'off'] },
      default: config.enabled ?? true,
      description:
        'workspace checkpoints before and after each turn, for /rewind, /undo and /redo (a shadow git repository under $DSH_HOME/checkpoints)',
      env: 'DSH_CHECKPOINTS',
      allowed: 'on or off',
      projectSafe: true,
    })
  })
  ctx.plugin(RewindService, config)
  ctx.inject(['rewind'], (inner) => {
    inner.on('agent/pre-step', async (input, next) => {
      if (input.first) inner.rewind.beginTurn(input.session)
      return next()
    })
    // Before a tool body that may change files: the workspace as the turn found it is kept (durably) first.
    inner.on('session/checkpoint', async ({ session, boundary, readOnly }) => {
      if (boundary !== 'tool-body' || readOnly) return
      if (await inner.rewind.logStart(session)) await inner.sessions.flush(session)
    })
    inner.on('agent/turn-closing', async ({ session }) => {
      await inner.rewind.endTurn(session)
    })
    // A restore the last process never finished: say which files came back before anything else runs.
    inner.on('agent/created', (agent) => {
      void inner.rewind.recover(agent.session)
      inner.rewind.warm(agent.session)
    })
    registerRewindCommands(inner)
  })
}

export default { name, inject, apply }
