// One ACP agent as a child: its process (a process group of its own, contained like tool processes so
// it dies with dsh), the ACP SDK's client over its stdio, and one ACP session in the parent's cwd.
// Runs are prompts sent one at a time (ACP allows one in flight); updates become progress in the
// parent's log; the agent's permission requests are put to the parent's approval service.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import type {} from '@dsh/agent/approval'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/world/subprocess'
import type { ChildRunResult, SubagentChild, SubagentLaunch } from '../subagents/index.js'
import { RunProgress } from './progress.js'

export interface AgentSpec {
  /** The agent's name in config (the provider is `acp:<name>`). */
  name: string
  argv: readonly string[]
  env: Record<string, string>
  startTimeoutMs: number
  graceMs: number
}

interface Queued {
  text: string
  resolve: (result: ChildRunResult) => void
}

const STDERR_TAIL = 4000
const CLIENT_INFO = { name: 'dsh', title: 'dsh (subagent provider)', version: '0.1.0' }

/** Maps an ACP stop reason to a run result. */
function resultOf(stopReason: acp.StopReason, text: string): ChildRunResult {
  if (stopReason === 'end_turn') return { outcome: 'completed', reason: 'completed', text }
  if (stopReason === 'cancelled') return { outcome: 'cancelled', reason: 'aborted', text }
  if (stopReason === 'max_tokens') return { outcome: 'failed', reason: 'max-tokens', text }
  return { outcome: 'failed', reason: 'blocked', text, message: `the agent stopped: ${stopReason}` }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref())

/**
 * Starts the agent's process, initializes ACP and opens a session in the parent session's cwd (with the
 * requested preset as the session mode when the agent offers it). Throws `SUBAGENT_START_FAILED` or
 * `SUBAGENT_UNSUPPORTED` after killing what it started.
 */
export async function startAcpChild(ctx: Context, launch: SubagentLaunch, spec: AgentSpec): Promise<SubagentChild> {
  const containment = await ctx.get('subprocess')?.containment()
  const argv = [...(containment?.prefix ?? []), ...spec.argv]
  const cwd = launch.request.cwd ?? launch.request.parent.session.header.cwd
  const proc = spawn(argv[0] as string, argv.slice(1), { cwd, env: spec.env, detached: true, stdio: 'pipe' })
  const child = new AcpChild(ctx, launch, spec, proc)
  try {
    await child.open(cwd)
    return child
  } catch (error) {
    await child.dispose()
    if (HarnessError.is(error)) throw error
    throw new HarnessError('SUBAGENT_START_FAILED', `the ACP agent "${spec.name}" did not start: ${child.why(error)}`, {
      agent: spec.name,
      argv: [...spec.argv],
    })
  }
}

class AcpChild implements SubagentChild {
  childSession = ''
  private readonly connection: acp.ClientConnection
  private readonly exited: Promise<void>
  private readonly queue: Queued[] = []
  private current: { done: Promise<void> } | undefined
  private progress: RunProgress | undefined
  private first = true
  private stderr = ''
  private exitNote: string | undefined
  private disposing: Promise<void> | undefined
  private unhook: (() => void) | undefined

  constructor(
    private readonly ctx: Context,
    private readonly launch: SubagentLaunch,
    private readonly spec: AgentSpec,
    private readonly proc: ChildProcessWithoutNullStreams,
  ) {
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = `${this.stderr}${chunk}`.slice(-STDERR_TAIL)
    })
    // A write to a dead agent must not take dsh down; the closed connection reports it.
    proc.stdin.on('error', () => {})
    this.exited = new Promise((resolve) => {
      proc.on('error', (error) => {
        this.exitNote = error.message
        resolve()
      })
      proc.on('close', (code, signal) => {
        this.exitNote ??= `the agent process exited (${signal ?? `code ${code}`})`
        resolve()
      })
    })
    const app = acp
      .client({ name: 'dsh' })
      .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => this.permission(params, signal))
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        if (params.sessionId === this.childSession) this.progress?.update(params.update)
      })
    this.connection = app.connect(
      acp.ndJsonStream(
        Writable.toWeb(proc.stdin) as WritableStream<Uint8Array>,
        Readable.toWeb(proc.stdout) as ReadableStream<Uint8Array>,
      ),
    )
    void this.exited.then(() => this.connection.close(new Error(this.exitNote)))
    // The child goes when its parent agent goes (dispose, or the process shutting down).
    this.unhook = launch.request.parent.ctx.effect(() => () => this.dispose(), `acp-subagent:${launch.id}`)
  }

  /** Why something failed, with the agent's last stderr lines when it wrote any. */
  why(error: unknown): string {
    const message = this.exitNote ?? (error instanceof Error ? error.message : String(error))
    const tail = this.stderr.trim().split('\n').slice(-5).join('\n')
    return tail ? `${message}\nits stderr ends with:\n${tail}` : message
  }

  async open(cwd: string): Promise<void> {
    const agent = this.connection.agent
    const timeout = AbortSignal.timeout(this.spec.startTimeoutMs)
    const options = { cancellationSignal: timeout }
    await agent.request(
      acp.methods.agent.initialize,
      {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: CLIENT_INFO,
      },
      options,
    )
    const session = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }, options)
    this.childSession = session.sessionId
    const preset = this.launch.request.preset
    if (preset === undefined) return
    const modes = session.modes?.availableModes.map((mode) => mode.id) ?? []
    if (!modes.includes(preset)) {
      throw new HarnessError(
        'SUBAGENT_UNSUPPORTED',
        `the ACP agent "${this.spec.name}" has no mode "${preset}" (its modes: ${modes.join(', ') || 'none'}); leave preset out`,
        { agent: this.spec.name, preset, modes },
      )
    }
    await agent.request(acp.methods.agent.session.setMode, { sessionId: this.childSession, modeId: preset }, options)
  }

  prompt(text: string): Promise<ChildRunResult> {
    if (this.disposing) return Promise.resolve({ outcome: 'cancelled', text: '', message: 'the subagent was closed' })
    return new Promise((resolve) => {
      this.queue.push({ text, resolve })
      this.pump()
    })
  }

  private pump(): void {
    if (this.current) return
    const next = this.queue.shift()
    if (!next) return
    const done = this.run(next.text).then((result) => {
      this.current = undefined
      next.resolve(result)
      this.pump()
    })
    this.current = { done }
  }

  private async run(text: string): Promise<ChildRunResult> {
    const progress = new RunProgress((update) => this.launch.progress(update))
    this.progress = progress
    // An ACP agent has no persona slot: the first prompt opens with it.
    const blocks = this.first ? [this.launch.persona, text] : [text]
    this.first = false
    try {
      const prompt: acp.ContentBlock[] = blocks.map((block) => ({ type: 'text', text: block }))
      const response = await this.connection.agent.request(acp.methods.agent.session.prompt, {
        sessionId: this.childSession,
        prompt,
      })
      return resultOf(response.stopReason, progress.finish())
    } catch (error) {
      return { outcome: 'failed', reason: 'error', text: progress.finish(), message: this.why(error) }
    } finally {
      if (this.progress === progress) this.progress = undefined
    }
  }

  /**
   * The agent asks before acting: the parent's approval service decides (the parent session's policy,
   * hooks and answerer: a person, an editor, `--yes`). Only a one-time allow is ever selected.
   */
  private async permission(
    params: acp.RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<acp.RequestPermissionResponse> {
    const pick = (...kinds: acp.PermissionOptionKind[]) => {
      for (const kind of kinds) {
        const option = params.options.find((item) => item.kind === kind)
        if (option) return { outcome: { outcome: 'selected' as const, optionId: option.optionId } }
      }
      return { outcome: { outcome: 'cancelled' as const } }
    }
    const approval = this.ctx.get('approval')
    if (!approval) return pick('reject_once')
    const { request, id } = this.launch
    const call = params.toolCall
    const decided = await approval.ask(
      {
        sessionId: request.parent.session.id,
        ...(request.callId !== undefined ? { toolCallId: request.callId } : {}),
        summary: `subagent ${this.spec.name}: ${call.title ?? call.toolCallId}`,
        reason: `the ACP agent "${this.spec.name}" asks before this action`,
        kind: 'subagent',
        details: {
          subagentId: id,
          agent: this.spec.name,
          childSession: this.childSession,
          toolCallId: call.toolCallId,
          ...(call.kind ? { toolKind: call.kind } : {}),
          options: params.options.map((option) => option.kind),
        },
      },
      signal,
    )
    if (decided.decision === 'allowed-once') return pick('allow_once')
    if (decided.decision === 'cancelled') return { outcome: { outcome: 'cancelled' } }
    return pick('reject_once')
  }

  async cancel(reason: string): Promise<void> {
    for (const dropped of this.queue.splice(0)) {
      dropped.resolve({ outcome: 'cancelled', text: '', message: `cancelled before it ran: ${reason}` })
    }
    const current = this.current
    if (!current) return
    await this.connection.agent
      .notify(acp.methods.agent.session.cancel, { sessionId: this.childSession })
      .catch(() => {})
    // An agent that ignores the cancel is stopped by dispose; the caller does not wait forever.
    await Promise.race([current.done, sleep(this.spec.graceMs)])
  }

  /** Cancels, lets the agent exit by closing its stdin (it flushes its log), then kills its group. */
  dispose(): Promise<void> {
    if (this.disposing) return this.disposing
    const unhook = this.unhook
    this.unhook = undefined
    this.disposing = this.shutdown()
    // Its disposer calls dispose() again, which now returns the shutdown under way.
    unhook?.()
    return this.disposing
  }

  private async shutdown(): Promise<void> {
    if (this.childSession) await this.cancel('the subagent was closed')
    this.proc.stdin.end()
    await Promise.race([this.exited, sleep(this.spec.graceMs)])
    this.kill('SIGTERM')
    await Promise.race([this.exited, sleep(2000)])
    this.kill('SIGKILL')
    await this.exited
    this.connection.close()
    for (const left of this.queue.splice(0)) {
      left.resolve({ outcome: 'cancelled', text: '', message: 'the subagent was closed' })
    }
  }

  private kill(signal: NodeJS.Signals): void {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null || this.proc.pid === undefined) return
    try {
      process.kill(-this.proc.pid, signal)
    } catch {
      // The group is gone already.
    }
  }
}
