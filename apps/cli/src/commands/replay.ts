// `dsh replay ID|FILE` (issue 37): re-runs a stored session with the model's answers served from its
// log (no key, no network) and its tools run again in a scratch copy of the workspace as it was when
// the session began (its first rewind checkpoint; else the workspace as it is now, with a warning),
// then reports the first place the replay diverges: a request that is not the logged one (config,
// system prompt, tool schemas, a message) or a tool result that differs. `--tools log` serves the tool
// results from the log too (a pure harness replay). The replay is a new session marked `replay/of`;
// nothing is written to the original session or the user's workspace. Exit 0 only when nothing diverged.
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Agent } from '@dsh/agent'
import type { ApprovalAnswerer } from '@dsh/agent/approval'
import type {} from '@dsh/agent/system-prompt'
import type {} from '@dsh/agent/tools'
import { rewindPoints } from '@dsh/interaction/rewind'
import { HarnessError } from '@dsh/kernel'
import type { ToolResultMessage } from '@dsh/llm'
import { type AnySessionEvent, foldMessages, type SessionHeader, type UnknownSessionEvent } from '@dsh/session'
import { resolveSessionId } from '@dsh/session/store'
import type {} from '@dsh/session/store/query'
import { SessionHost } from '@dsh/surfaces/host'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { printable } from '../printable.js'
import { type RuntimeScope, withRuntime } from '../runtime.js'

type TreeRuntime = RuntimeScope['runtime']

import {
  type Divergence,
  dataOf,
  firstDivergence,
  type LoggedRequest,
  loggedRequests,
  loggedResults,
} from './replay-compare.js'

declare module '@dsh/session' {
  interface SessionEventMap {
    /** This session is a replay of `of` (`dsh replay`): its model answers came from that log. */
    'replay/of': {
      of: string
      tools: 'run' | 'log'
      workspace: 'checkpoint' | 'current'
      /** A what-if: the conversation before this message, then it again under `model`. */
      from?: number
      model?: string
    }
  }
}

type Event = AnySessionEvent | UnknownSessionEvent

export interface ReplayOptions {
  tools?: 'run' | 'log'
  json?: boolean
  /** Keep the scratch workspace (its path is printed). */
  keep?: boolean
}

export interface ReplayReport {
  original: string
  replay: string
  requests: { original: number; replay: number }
  toolResults: { original: number; replay: number }
  workspace: 'checkpoint' | 'current'
  divergence?: Divergence
}

export interface Original {
  header: SessionHeader
  events: Event[]
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** A session JSONL file as `dsh sessions export --format jsonl` writes it (a torn last line is dropped). */
export function parseSessionFile(path: string): Original {
  const lines = readFileSync(path, 'utf8').split('\n')
  while (lines.length > 0 && lines.at(-1)?.trim() === '') lines.pop()
  const parsed: unknown[] = []
  lines.forEach((line, index) => {
    try {
      const { crc: _crc, hash: _hash, ...value } = JSON.parse(line) as Record<string, unknown>
      parsed.push(value)
    } catch {
      if (index === lines.length - 1) return
      throw new HarnessError('REPLAY_FILE_INVALID', `${path} line ${index + 1} is not JSON`, { path, line: index + 1 })
    }
  })
  const header = parsed[0] as SessionHeader | undefined
  if (header?.type !== 'session')
    throw new HarnessError(
      'REPLAY_FILE_INVALID',
      `${path} is not a session log (its first line is not a session header)`,
      {
        path,
      },
    )
  return { header, events: parsed.slice(1) as Event[] }
}

/** The logged decision for each tool call that asked a person, so the replay answers as they did. */
function decisionsOf(events: readonly Event[]): Map<string, string> {
  const out = new Map<string, string>()
  for (const event of events) {
    if (event.type !== 'approval/decided') continue
    const data = dataOf(event)
    if (typeof data.toolCallId === 'string' && typeof data.decision === 'string')
      out.set(data.toolCallId, data.decision)
  }
  return out
}

/** Which row provides each of the original's model providers (to swap for the replay provider). */
function providerRows(providers: readonly string[]): string[] {
  const rows = new Set<string>()
  for (const provider of providers) {
    if (provider === 'deepseek') rows.add('llm-deepseek')
    else if (provider.startsWith('openai-compatible')) rows.add('llm-openai-compatible')
    else if (provider !== 'replay' && provider !== 'scripted') rows.add('llm-pi-ai')
  }
  return [...rows]
}

export async function loadOriginal(request: ComposeRequest, target: string, io: Io): Promise<Original> {
  if (isFile(target)) return parseSessionFile(target)
  return withRuntime(request, io, async ({ runtime }) => {
    const query = runtime.root.get('sessionQuery')
    if (!query) throw new HarnessError('CONFIG_NO_QUERY', 'the profile has no session-query row', {})
    const id = await resolveSessionId(runtime.root.sessionStore, target)
    const session = await query.read(id)
    return { header: session.header, events: [...session.events] }
  })
}

/** The scratch workspace: the first checkpoint's files, else a copy of the workspace as it is now. */
async function scratchWorkspace(
  request: ComposeRequest,
  original: Original,
  into: string,
  io: Io,
): Promise<'checkpoint' | 'current'> {
  const first = original.events.find((event) => event.type === 'checkpoint/taken')
  const snapshot = first ? dataOf(first).snapshot : undefined
  if (typeof snapshot === 'string' && existsSync(original.header.cwd)) {
    const done = await withRuntime(request, io, async ({ runtime }) => {
      const snapshots = runtime.root.get('snapshots')
      if (!snapshots) return false
      await snapshots.materialize(original.header.cwd, snapshot, into)
      return true
    }).catch((error: unknown) => {
      io.err(`dsh: warning: the session's first checkpoint could not be read back (${String(error)})`)
      return false
    })
    if (done) return 'checkpoint'
  }
  if (!existsSync(original.header.cwd))
    throw new HarnessError(
      'REPLAY_NO_WORKSPACE',
      `the session's workspace ${original.header.cwd} is gone and it has no checkpoint to start from; use --tools log to replay without running tools`,
      { cwd: original.header.cwd },
    )
  io.err(
    `dsh: warning: no checkpoint of ${original.header.cwd} from when the session began; the tools run on a copy of it as it is now`,
  )
  cpSync(original.header.cwd, into, { recursive: true, filter: (source) => !source.split('/').includes('.git') })
  return 'current'
}

export async function replaySession(
  request: ComposeRequest,
  target: string,
  options: ReplayOptions,
  io: Io,
): Promise<{ code: number; report: ReplayReport }> {
  const tools = options.tools ?? 'run'
  const original = await loadOriginal(request, target, io)
  const assistant = original.events.flatMap((event) =>
    event.type === 'assistant/message' ? [(dataOf(event) as { message: unknown }).message] : [],
  )
  const requests = loggedRequests(original.events, (events) => foldMessages(events as AnySessionEvent[]))
  const first = requests[0]
  if (!first || assistant.length === 0)
    throw new HarnessError('REPLAY_NOTHING', `session ${original.header.id} has no model request to replay`, {
      id: original.header.id,
    })
  const configs = requests.map((logged) => logged.config as { provider: string; model: string })
  const providers = [...new Set(configs.map((config) => config.provider))]
  const scratch = mkdtempSync(join(tmpdir(), 'dsh-replay-'))
  const workspaceDir = join(scratch, 'workspace')
  mkdirSync(workspaceDir)
  try {
    const workspace = tools === 'log' ? 'current' : await scratchWorkspace(request, original, workspaceDir, io)
    const replayRequest: ComposeRequest = {
      ...request,
      launcherRows: [
        ...(request.launcherRows ?? []),
        ...providerRows(providers).map((id) => ({ id, disabled: true as const })),
        { id: 'llm-replay', use: '@dsh/llm/replay', config: { providers, messages: assistant } },
      ],
    }
    const report = await withRuntime(replayRequest, io, async ({ runtime }) => {
      const root = runtime.root
      const decisions = decisionsOf(original.events)
      const answer: ApprovalAnswerer = (question) => {
        const decision = question.toolCallId ? decisions.get(question.toolCallId) : undefined
        return decision === 'allowed-once'
          ? 'allowed-once'
          : { decision: 'rejected', reason: 'rejected in the original session' }
      }
      if (tools === 'log') {
        // Served from the log: the body never runs; the result is the one the original recorded.
        const logged = new Map(
          original.events.flatMap((event) => {
            if (event.type !== 'tool/result') return []
            const message = dataOf(event).message as Pick<ToolResultMessage, 'toolCallId' | 'content' | 'isError'>
            return [[message.toolCallId, message] as const]
          }),
        )
        root.on('tools/execute', async (execution, next) => {
          const message = logged.get(execution.callId)
          if (!message) return next()
          return { content: [...message.content], isError: message.isError, additionalContext: [] }
        })
      }
      root.sessions.defineEvent('replay/of')
      const host = new SessionHost(root, {
        name: 'dsh replay',
        closeReason: 'the replay ended',
        cwd: workspaceDir,
        answerApprovals: answer,
        answerQuestions: false,
        log: (line) => io.err(`dsh: ${line}`),
      })
      try {
        const preset = original.events.find((event) => event.type === 'session/preset')
        const presetName = preset ? dataOf(preset).preset : undefined
        const agent = await host.create({
          cwd: workspaceDir,
          model: first.config as { provider: string; model: string },
          ...(typeof presetName === 'string' ? { preset: presetName } : {}),
        })
        const session = agent.session
        session.append('replay/of', { of: original.header.id, tools, workspace }, { ignorable: true })
        const points = rewindPoints(original.events as AnySessionEvent[])
        for (const point of points) {
          io.err(`dsh: replaying message ${point.number} of ${points.length}`)
          agent.followup(point.text)
          await agent.whenIdle()
        }
        await root.sessions.flush(session)
        const replayed = [...session.events] as Event[]
        const real = realpathSync(workspaceDir)
        const firstHeader = original.events.find((event) => event.type === 'request/header')
        const originalDate = new Date(firstHeader?.time ?? original.header.createdAt).toISOString().slice(0, 10)
        const today = new Date().toISOString().slice(0, 10)
        const normalize = (text: string) =>
          text
            .split(real)
            .join(original.header.cwd)
            .split(workspaceDir)
            .join(original.header.cwd)
            .replace(`Today is ${today}`, `Today is ${originalDate}`)
        const replayRequests = loggedRequests(replayed, (events) => foldMessages(events as AnySessionEvent[]))
        const found = firstDivergence(
          { requests, results: loggedResults(original.events) },
          { requests: replayRequests, results: loggedResults(replayed) },
          normalize,
        )
        const divergence =
          found && found.kind === 'request'
            ? await blameRows(found, runtime, agent, requests[found.index], normalize)
            : found
        const report: ReplayReport = {
          original: original.header.id,
          replay: session.id,
          requests: { original: requests.length, replay: replayRequests.length },
          toolResults: { original: loggedResults(original.events).length, replay: loggedResults(replayed).length },
          workspace,
          ...(divergence ? { divergence } : {}),
        }
        return report
      } finally {
        await host.close()
      }
    })
    if (options.keep) io.err(`dsh: the replay's workspace is kept: ${workspaceDir}`)
    return { code: report.divergence ? ExitCode.DIVERGED : ExitCode.OK, report }
  } finally {
    if (!options.keep) rmSync(scratch, { recursive: true, force: true })
  }
}

/**
 * Which composition rows a differing system prompt or tool list comes from: the row of each section
 * of the replay's prompt that the original's does not hold, the row of each tool that was added or
 * changed; a section or tool only the original had belongs to a row that is gone (named as such).
 */
async function blameRows(
  divergence: Divergence,
  runtime: TreeRuntime,
  agent: Agent,
  original: LoggedRequest | undefined,
  normalize: (text: string) => string,
): Promise<Divergence> {
  const rowOf = (owner: unknown) => runtime.rowOf(owner) ?? 'a plugin outside the composition'
  const blame: string[] = []
  if (divergence.part === 'system' && original) {
    const sections = await agent.ctx.root.systemPrompt.parts({
      cwd: agent.session.header.cwd,
      sessionId: agent.session.id,
      agentId: agent.id,
      ...agent.model,
    })
    for (const section of sections) {
      if (!original.system.includes(normalize(section.text)))
        blame.push(`prompt section ${section.name} (row ${rowOf(section.owner)}) is new or changed`)
    }
    if (blame.length === 0)
      blame.push('a prompt section the original had is gone (its row is disabled or removed from the composition)')
  } else if (divergence.part.startsWith('tools') && original) {
    const names = /^tools \((.*)\)$/.exec(divergence.part)?.[1]?.split(', ') ?? []
    const before = new Set(original.tools.map((tool) => (tool as { name?: string }).name))
    for (const name of names) {
      const owner = agent.ctx.root.tools.ownerOf(name, { agentId: agent.id })
      if (owner === undefined)
        blame.push(`tool ${name} was offered before and is not now (its row is disabled or removed)`)
      else blame.push(`tool ${name} (row ${rowOf(owner)}) is ${before.has(name) ? 'changed' : 'new'}`)
    }
  }
  return blame.length ? { ...divergence, rows: blame } : divergence
}

export function describeReport(report: ReplayReport): string[] {
  const lines = [
    `replayed ${report.original} as ${report.replay}: ${report.requests.replay} of ${report.requests.original} requests, ${report.toolResults.replay} of ${report.toolResults.original} tool results${report.workspace === 'current' ? ' (tools ran on the workspace as it is now)' : ''}`,
  ]
  const d = report.divergence
  if (!d) lines.push('no divergence: every request and tool result is the logged one')
  else {
    const where =
      d.kind === 'requests'
        ? 'the number of requests differs'
        : d.kind === 'tool-result'
          ? `the result of tool call ${d.part} differs (before request ${d.index + 1})`
          : `request ${d.index + 1} differs in ${d.part}`
    lines.push(`diverged: ${where}`, ...d.diff.map((line) => `  ${printable(line)}`))
    for (const row of d.rows ?? []) lines.push(`responsible: ${printable(row)}`)
  }
  return lines
}

export async function replay(request: ComposeRequest, target: string, options: ReplayOptions, io: Io): Promise<number> {
  const { code, report } = await replaySession(request, target, options, io)
  if (options.json) io.out(JSON.stringify(report, null, 2))
  else for (const line of describeReport(report)) io.out(line)
  return code
}

/** `dsh test DIR`: every session file in the folder replayed; exit 13 when any diverged. */
export async function replayFolder(
  request: ComposeRequest,
  dir: string,
  options: Omit<ReplayOptions, 'keep'>,
  io: Io,
): Promise<number> {
  const files =
    existsSync(dir) && statSync(dir).isDirectory()
      ? readdirSync(dir)
          .filter((name) => name.endsWith('.jsonl'))
          .sort()
      : []
  if (files.length === 0)
    throw new HarnessError(
      'REPLAY_NOTHING',
      `${dir} holds no session files (*.jsonl); record one with: dsh sessions export ID --format jsonl > ${join(dir, 'name.jsonl')}`,
      { dir },
    )
  const reports: Array<{ file: string; report: ReplayReport }> = []
  let failed = 0
  for (const name of files) {
    const { code, report } = await replaySession(request, join(dir, name), options, io)
    reports.push({ file: name, report })
    if (code !== ExitCode.OK) failed++
    if (!options.json) {
      io.out(`${code === ExitCode.OK ? 'ok  ' : 'FAIL'} ${name}`)
      if (code !== ExitCode.OK) for (const line of describeReport(report).slice(1)) io.out(`     ${line}`)
    }
  }
  if (options.json) io.out(JSON.stringify(reports, null, 2))
  else io.out(`${files.length - failed} of ${files.length} sessions replayed without divergence`)
  return failed > 0 ? ExitCode.DIVERGED : ExitCode.OK
}
