// `dsh run "<task>"`: boot the profile (headless by default), run one task to whole-agent idle through
// `ctx.headless`, print the answer, exit with a code that says how the turn ended.
import { appendFile, readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { dshHome } from '@dsh/composition'
import type {} from '@dsh/context'
import { describeGiveUp, describeRetry } from '@dsh/context/recovery-text'
import { type Context, HarnessError } from '@dsh/kernel'
import { isEvent, type SessionEvent } from '@dsh/session'
import { resolveSessionId } from '@dsh/session/store'
import type { HeadlessRunRequest, RefusedCall } from '@dsh/surfaces/headless'
import { turnEndedText } from '@dsh/surfaces/host'
import { attachServer } from '@dsh/surfaces/rpc/attach'
import { announceBackground, BACKGROUND_ENV, finishBackground } from '../background.js'
import type { ComposeRequest } from '../config.js'
import { ExitCode, exitCodeForRun } from '../exit-codes.js'
import { checkFolderTrust } from '../folder-trust.js'
import { type Io, readAllText } from '../io.js'
import { withRuntime } from '../runtime.js'
import { armStopGrace } from '../stop-grace.js'
import {
  closeWorktree,
  type OpenWorktree,
  openWorktree,
  type WorktreeEnd,
  worktreeOption,
} from '../worktree-session.js'

export interface RunOptions {
  output: 'text' | 'json' | 'stream-json'
  model?: string
  provider?: string
  cwd?: string
  permissionMode?: string
  preset?: string
  network?: string
  yes?: boolean
  maxTurns?: number
  maxSteps?: number
  /** `--max-cost`: the session's cost budget in US dollars. */
  maxCost?: number
  resume?: string
  continue?: boolean
  attach?: string[]
  /** `user@host:/path`: run every tool on that machine over SSH. */
  remote?: string
  /** `--task-file FILE`: the task (e.g. an issue body) from a file, after the words given as arguments. */
  taskFile?: string
  /** `--summary FILE`: append a Markdown summary of the run (e.g. $GITHUB_STEP_SUMMARY). */
  summary?: string
  /** `--worktree [name]`: work in a new git worktree on branch dsh/<name>. */
  worktree?: string | boolean
  /** `--carry-changes`: bring the repository's uncommitted tracked changes into the worktree. */
  carryChanges?: boolean
  /** `--worktree-end`: what happens to the worktree's branch at the end (default keep). */
  worktreeEnd?: WorktreeEnd
  /** `--bg`: handled by the launcher (see background.ts); never reaches `run`. */
  bg?: boolean
}

/** What a caller of `run` hears about the run's session: its id once it exists, and how it ended. */
interface RunHooks {
  onSession?: (id: string) => void
  onEnd?: (id: string, reason: string, code: number) => void
  ask?: HeadlessRunRequest['ask']
  onClose?: () => Promise<void> | undefined
}

/** Reads the task: the arguments joined, or stdin when the only argument is `-`. */
export async function readTask(args: string[], stdin: NodeJS.ReadableStream = process.stdin): Promise<string> {
  if (args.length === 1 && args[0] === '-') return (await readAllText(stdin)).trim()
  return args.join(' ').trim()
}

/** `--model provider:model` or `--provider p --model m`. */
export function modelOf(options: Pick<RunOptions, 'model' | 'provider'>): { provider?: string; model?: string } {
  let provider = options.provider
  let model = options.model
  if (model?.includes(':') && !provider) {
    const colon = model.indexOf(':')
    provider = model.slice(0, colon)
    model = model.slice(colon + 1)
  }
  const out: { provider?: string; model?: string } = {}
  if (provider) out.provider = provider
  if (model) out.model = model
  return out
}

/** What a headless run says about the calls it refused for want of a person to approve them. */
function refusedLines(refused: RefusedCall[]): string[] {
  if (refused.length === 0) return []
  const lines = [
    `dsh: ${refused.length === 1 ? '1 call needed' : `${refused.length} calls needed`} approval and nobody could give it (headless), so ${refused.length === 1 ? 'it was' : 'they were'} refused:`,
  ]
  for (const call of refused)
    lines.push(`dsh:   ${call.tool ? `${call.tool}: ` : ''}${call.summary}${call.reason ? ` (${call.reason})` : ''}`)
  const rules = [...new Set(refused.flatMap((call) => (call.rule ? [call.rule] : [])))]
  const example = JSON.stringify(rules.length > 0 ? rules : ['Bash(npm test:*)'])
  lines.push(
    'dsh: to allow them: rerun with --yes (each such call once), choose a --permission-mode that allows them,',
    `dsh: or allow them by a rule in $DSH_HOME/settings.yaml: permissions: { allow: ${example} }`,
  )
  return lines
}

/** What a person waiting on `dsh run` must see even when stderr is not a terminal: the run is retrying. */
export function retryLine(event: SessionEvent): string | undefined {
  if (isEvent(event, 'recovery/retry')) return `dsh: ${describeRetry(event.data)}`
  if (isEvent(event, 'recovery/give-up')) return `dsh: ${describeGiveUp(event.data)}`
  return undefined
}

export function progressLine(event: SessionEvent): string | undefined {
  if (event.type === 'tool/call') {
    const call = event.data.call
    const args = JSON.stringify(call.arguments)
    return `dsh: • ${call.name} ${args.length > 100 ? `${args.slice(0, 97)}...` : args}`
  }
  if (event.type === 'tool/result') {
    const data = event.data
    if (data.message.isError) return `dsh:   ${data.message.toolName} failed${data.code ? ` (${data.code})` : ''}`
  }
  return undefined
}

export async function run(request: ComposeRequest, options: RunOptions, io: Io): Promise<number> {
  if (options.worktree === undefined || options.worktree === false) return runIn(request, options, io)
  const args = [...(request.args ?? [])]
  const name = worktreeOption(options.worktree, args)
  if (options.remote !== undefined) {
    throw new HarnessError('USAGE', '--worktree works on this machine; it cannot be combined with --remote', {})
  }
  if (args.length === 0 && !options.taskFile && !options.continue && !options.resume) {
    throw new HarnessError(
      'USAGE',
      `no task given: dsh run --worktree${name ? `=${name}` : ''} "<task>"${name ? ` (--worktree took "${name}" as the worktree's name)` : ''}`,
      {},
    )
  }
  const open: OpenWorktree = await openWorktree(request, io, {
    cwd: resolve(options.cwd ?? request.cwd ?? process.cwd()),
    ...(name ? { name } : {}),
    ...(options.carryChanges ? { carry: true } : {}),
  })
  let sessionId: string | undefined
  try {
    return await runIn({ ...request, args, cwd: open.cwd }, { ...options, cwd: open.cwd }, io, {
      onSession: (id) => {
        sessionId = id
        open.worktrees.attachSession(open.record, id)
      },
    })
  } finally {
    await closeWorktree(open, io, {
      ...(sessionId ? { sessionId } : {}),
      choose: async () => options.worktreeEnd,
    })
  }
}

async function runIn(request: ComposeRequest, options: RunOptions, io: Io, hooks: RunHooks = {}): Promise<number> {
  let task = await readTask(request.args ?? [], io.stdin)
  if (options.taskFile !== undefined) {
    const body = await readFile(options.taskFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw new HarnessError(
        'USAGE',
        `cannot read the task file ${options.taskFile}: ${error.code ?? error.message}`,
        {},
      )
    })
    task = [task, body.trim()].filter(Boolean).join('\n\n')
  }
  if (!task && !options.continue && !options.resume) {
    throw new HarnessError('USAGE', 'no task given: dsh run "<task>" (or `-` to read it from stdin)', {})
  }
  const composed = options.remote === undefined ? request : { ...request, remote: options.remote }
  if (options.remote === undefined) {
    const folders = [request.cwd ?? process.cwd(), ...(options.cwd ? [options.cwd] : [])]
    await checkFolderTrust(request, io, { folders })
  }
  return withRuntime(composed, io, (scope) => {
    const remote = scope.composition.remote
    if (remote && options.cwd !== undefined) {
      throw new HarnessError(
        'USAGE',
        '--cwd and the remote world both name the working directory: give the remote directory in --remote user@host:/path',
        {},
      )
    }
    // In the remote world the session works in the remote directory, a path on that machine.
    const env = request.env ?? process.env
    // A background run serves its session on an attach socket: `dsh attach` watches it and answers its approvals.
    const attach = env[BACKGROUND_ENV] ? attachServer(scope.runtime.root, { home: dshHome(env) }) : undefined
    return runTask(scope.runtime.root, task, options, io, remote?.path, {
      ...(attach
        ? { ask: { listeners: attach.listeners, onHost: (host, id) => attach.listen(host, id).then(() => {}) } }
        : {}),
      onClose: () => attach?.close(),
      onSession: (id) => {
        hooks.onSession?.(id)
        announceBackground(env, id, { cwd: remote?.path ?? resolve(options.cwd ?? process.cwd()), task })
      },
      onEnd: (id, reason, code) => {
        hooks.onEnd?.(id, reason, code)
        finishBackground(env, id, reason, code)
      },
    })
  })
}

async function runTask(
  root: Context,
  task: string,
  options: RunOptions,
  io: Io,
  remoteCwd?: string,
  hooks: RunHooks = {},
): Promise<number> {
  const controller = new AbortController()
  let signalCode: number | undefined
  let grace: { release(): void } | undefined
  const stopSignals = io.onSignal((signal) => {
    if (signalCode !== undefined) io.forceExit(signalCode) // a second signal: stop now
    const code = signal === 'SIGTERM' ? ExitCode.SIGTERM : ExitCode.SIGINT
    signalCode = code
    io.err('dsh: interrupted; cancelling and saving the session (press Ctrl-C again to force)')
    controller.abort()
    grace = armStopGrace(root, io, code)
  })
  try {
    const headless = root.get('headless')
    if (!headless) {
      throw new HarnessError(
        'CONFIG_NO_RUNNER',
        'the profile has no headless runner row (headless-runner); use --profile headless',
        {},
      )
    }
    const progress = options.output !== 'stream-json' && io.stderrIsTty
    const store = root.get('sessionStore')
    const resume = options.resume && store ? await resolveSessionId(store, options.resume) : options.resume
    const result = await headless.run({
      task: task || 'Continue.',
      cwd: remoteCwd ?? resolve(options.cwd ?? process.cwd()),
      attachments: options.attach?.map((file) => resolve(file)),
      model: modelOf(options),
      resume,
      continue: options.continue,
      yes: options.yes,
      permissionMode: options.permissionMode,
      preset: options.preset,
      network: options.network,
      maxSteps: options.maxSteps,
      ...(options.maxCost !== undefined ? { maxCost: options.maxCost } : {}),
      maxTurns: options.maxTurns,
      signal: controller.signal,
      onSession: (id) => hooks.onSession?.(id),
      ...(hooks.ask ? { ask: hooks.ask } : {}),
      onEvent: (event) => {
        if (options.output === 'stream-json') io.out(JSON.stringify(event))
        else if (retryLine(event)) io.err(retryLine(event) as string)
        else if (progress) {
          const line = progressLine(event)
          if (line) io.err(line)
        }
      },
    })
    const summary = {
      type: 'summary',
      sessionId: result.sessionId,
      reason: result.reason,
      text: result.text,
      usage: result.usage,
      cost: result.cost,
      turns: result.turns,
      ...(result.message ? { message: result.message } : {}),
      ...(result.error ? { error: result.error } : {}),
      ...(result.refused.length > 0 ? { refused: result.refused } : {}),
      ...(result.discarded ? { discarded: true } : {}),
    }
    if (options.output === 'stream-json') io.out(JSON.stringify(summary))
    else if (options.output === 'json') io.out(JSON.stringify(summary, null, 2))
    else if (result.text) io.out(result.text)
    if (result.reason !== 'completed' && options.output === 'text') {
      const why = result.error?.message ?? result.message ?? result.reason
      io.err(`dsh: ${turnEndedText(result.reason)}: ${why}`)
    }
    for (const line of refusedLines(result.refused)) io.err(line)
    if (options.summary && !result.discarded) {
      const status = result.reason === 'completed' ? 'completed' : turnEndedText(result.reason)
      const page = `## dsh run\n\n${result.text?.trim() || '(no answer)'}\n\n_session ${result.sessionId} · ${status} · cost ${result.cost.text}_\n\n`
      await appendFile(options.summary, page)
    }
    const code = signalCode ?? exitCodeForRun(result.reason, result.error?.code, result.error?.message)
    hooks.onEnd?.(result.sessionId, result.reason, code)
    if (result.discarded) {
      if (options.output === 'text') io.err('dsh: no model answered, so no session was kept')
    } else if (!result.durable) io.err('dsh: warning: no session persistence row is active; this session was not saved')
    else if (code !== ExitCode.OK && code !== ExitCode.CONFIG && options.output === 'text') {
      io.err(`dsh: resume with: dsh run --resume ${result.sessionId} "<next message>"`)
    }
    return code
  } finally {
    await hooks.onClose?.()
    // Not cleared: it also bounds the teardown after the run (see stop-grace.ts).
    grace?.release()
    stopSignals()
  }
}
