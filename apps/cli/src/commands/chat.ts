// Plain `dsh` (and `dsh "first prompt"`): the interactive terminal chat of the `tui` profile through
// `ctx.tui`. When stdin or stdout is not a terminal there is nobody to chat with, so the prompt runs
// as `dsh run` would, with a hint saying so.
import { resolve } from 'node:path'
import { type Context, HarnessError } from '@dsh/kernel'
import { resolveSessionId } from '@dsh/session/store'
import type { ChatScreen } from '@dsh/surfaces/tui'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import { askLine, checkFolderTrust } from '../folder-trust.js'
import type { Io } from '../io.js'
import { withRuntime } from '../runtime.js'
import { armStopGrace } from '../stop-grace.js'
import { closeWorktree, openWorktree, type WorktreeEnd, worktreeOption } from '../worktree-session.js'
import { modelOf, type RunOptions, run } from './run.js'

export interface ChatOptions {
  model?: string
  provider?: string
  cwd?: string
  permissionMode?: string
  preset?: string
  /** An id, or `true` for the picker. */
  resume?: string | boolean
  continue?: boolean
  /** `--worktree [name]`: work in a new git worktree (see worktree-session.ts). */
  worktree?: string | boolean
  carryChanges?: boolean
}

export interface Terminal {
  stdinIsTty: boolean
  stdoutIsTty: boolean
}

export async function chat(
  request: ComposeRequest,
  options: ChatOptions,
  io: Io,
  terminal: Terminal = { stdinIsTty: Boolean(process.stdin.isTTY), stdoutIsTty: Boolean(process.stdout.isTTY) },
  onSession?: (id: string) => void,
): Promise<number> {
  if (options.worktree !== undefined && options.worktree !== false && terminal.stdinIsTty && terminal.stdoutIsTty) {
    const args = [...(request.args ?? [])]
    const name = worktreeOption(options.worktree, args)
    const open = await openWorktree(request, io, {
      cwd: resolve(options.cwd ?? request.cwd ?? process.cwd()),
      ...(name ? { name } : {}),
      ...(options.carryChanges ? { carry: true } : {}),
    })
    let sessionId: string | undefined
    try {
      const { worktree: _, ...rest } = options
      return await chat({ ...request, args, cwd: open.cwd }, { ...rest, cwd: open.cwd }, io, terminal, (id) => {
        sessionId = id
      })
    } finally {
      await closeWorktree(open, io, {
        ...(sessionId ? { sessionId } : {}),
        choose: async () => {
          const answer = await askLine(
            { input: io.stdin, output: process.stderr },
            'Merge it into the repository, keep the branch, or discard it? [m/k/d] (k) ',
          )
          const word = answer.trim().toLowerCase()
          const choices: Record<string, WorktreeEnd> = { m: 'merge', merge: 'merge', d: 'discard', discard: 'discard' }
          return choices[word] ?? 'keep'
        },
      })
    }
  }
  const prompt = (request.args ?? []).join(' ').trim()
  if (!terminal.stdinIsTty || !terminal.stdoutIsTty) {
    io.err('dsh: not a terminal, so no chat: running the prompt as `dsh run` does (use `dsh run` to silence this)')
    const runOptions: RunOptions = {
      output: 'text',
      permissionMode: options.permissionMode ?? 'workspace-write',
      ...(typeof options.resume === 'string' ? { resume: options.resume } : {}),
      ...(options.continue ? { continue: true } : {}),
      ...(options.preset ? { preset: options.preset } : {}),
      ...(options.model ? { model: options.model } : {}),
      ...(options.provider ? { provider: options.provider } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(options.worktree !== undefined ? { worktree: options.worktree } : {}),
      ...(options.carryChanges ? { carryChanges: true } : {}),
    }
    // Without a prompt argument the task is read from stdin, as `dsh run -` does.
    return run({ ...request, command: 'run', args: prompt ? (request.args ?? []) : ['-'] }, runOptions, io)
  }
  await checkFolderTrust(request, io, {
    folders: [request.cwd ?? process.cwd(), ...(options.cwd ? [options.cwd] : [])],
    ask: { input: io.stdin, output: process.stderr },
  })
  const noColor = Boolean((request.env ?? process.env).NO_COLOR)
  // First paint before the tree boots: the person sees the editor and can type while dsh starts.
  const screen = (await import('@dsh/surfaces/tui/screen')).openScreen(noColor)
  try {
    return await withRuntime(request, io, ({ runtime }) => chatOn(runtime.root, prompt, options, screen, io, onSession))
  } finally {
    screen.stop()
  }
}

async function chatOn(
  root: Context,
  prompt: string,
  options: ChatOptions,
  screen: ChatScreen,
  io: Io,
  onSession?: (id: string) => void,
): Promise<number> {
  const tui = root.get('tui')
  if (!tui) {
    throw new HarnessError(
      'CONFIG_NO_CHAT',
      'the profile has no terminal-chat row (terminal-chat); use --profile tui',
      {},
    )
  }
  const controller = new AbortController()
  let signalCode: number | undefined
  let grace: { release(): void } | undefined
  // In raw mode Ctrl-C is a key the chat handles; a signal here comes from outside (kill, a closed terminal).
  const stopSignals = io.onSignal((signal) => {
    if (signalCode !== undefined) io.forceExit(signalCode)
    signalCode = signal === 'SIGTERM' ? ExitCode.SIGTERM : ExitCode.SIGINT
    // A tool body that ignores the abort cannot hold the chat past the grace.
    grace = armStopGrace(root, io, signalCode, () => screen.stop())
    controller.abort()
  })
  // A closed terminal (SIGHUP) ends the chat like an exit: the session is flushed and released.
  const onHangup = () => controller.abort()
  process.once('SIGHUP', onHangup)
  try {
    const model = modelOf(options)
    const store = root.get('sessionStore')
    const resume =
      typeof options.resume === 'string' && store ? await resolveSessionId(store, options.resume) : options.resume
    const result = await tui.run({
      cwd: resolve(options.cwd ?? process.cwd()),
      ...(Object.keys(model).length > 0 ? { model } : {}),
      ...(typeof resume === 'string' ? { resume } : {}),
      ...(resume === true ? { pick: true } : {}),
      ...(options.continue ? { continue: true } : {}),
      ...(options.permissionMode ? { permissionMode: options.permissionMode } : {}),
      ...(options.preset ? { preset: options.preset } : {}),
      ...(prompt ? { prompt } : {}),
      screen,
      signal: controller.signal,
    })
    if (result.sessionId) {
      onSession?.(result.sessionId)
      if (result.durable)
        io.out(`dsh: session ${result.sessionId} saved; continue it with: dsh --resume ${result.sessionId}`)
      else io.err('dsh: warning: no session persistence row is active; this session was not saved')
    }
    return signalCode ?? ExitCode.OK
  } finally {
    grace?.release()
    stopSignals()
    process.off('SIGHUP', onHangup)
  }
}
