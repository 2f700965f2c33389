// The one table of the session host's operations on the wire. Per operation: its name (the RPC
// method), its params schema (validated before the handler runs; the TypeScript params type is read
// off it), the error codes it answers besides INVALID_PARAMS, where the web serves it, and a small
// handler `(host, params, scope) => result`. `dsh rpc`'s dispatch, the web routes and the types of
// the SDK and the browser are derived from it; an operation on one wire only says why.
import type { Agent } from '@dsh/agent'
import { launcherHome } from '@dsh/composition/launcher'
import { HarnessError, toJsonSafe } from '@dsh/kernel'
import { contentText, type SessionStep } from '@dsh/session'
import {
  type AgentRow,
  type AttachmentInput,
  agentNamed,
  listAgents,
  parseAttachments,
  type SessionHost,
  stopAgent,
} from '../host/index.js'
import { attachCall } from '../rpc/attach-path.js'
import { exportFile, searchSessions, workspacesView } from '../web/session-api.js'
import { credentialsOf, modelsView, settingsOf, settingsView } from '../web/settings-api.js'
import { type Operation, op, type WebRoute, type WireScope } from './operation.js'
import { checkParams, type FromSchema, type JsonSchema, NoParams, Schema as S } from './schema.js'
import { trustOperations } from './trust-operations.js'
import type {
  CancelResult,
  CommandRunResult,
  CompareResult,
  JobOutputView,
  ModelRoute,
  PresetListResult,
  PromptResult,
  RewindPointsResult,
  RewindPointView,
  SearchHitView,
  SessionCreateResult,
  SessionForkResult,
  SessionListResult,
  SessionResumeResult,
  SessionRewindResult,
  SessionSummary,
  SessionUsageResult,
  StatusLineResult,
  StepResult,
  StepSummaryView,
  StepsResult,
  WireFile,
} from './types.js'

/** A step as the list shows it: the request summed up, the answer and calls whole. */
function stepSummary(step: SessionStep, index: number): StepSummaryView {
  const { request } = step
  const config = (request.config ?? {}) as { provider?: unknown; model?: unknown }
  const last = request.messages.at(-1) as { role?: unknown; content?: unknown } | undefined
  return {
    index,
    seq: request.seq,
    model: `${String(config.provider ?? '?')}:${String(config.model ?? '?')}`,
    systemChars: request.system.length,
    tools: request.tools.map((tool) => String((tool as { name?: unknown }).name ?? '?')),
    messages: request.messages.length,
    ...(last ? { last: { role: String(last.role ?? '?'), text: contentText(last.content) } } : {}),
    answer: step.answer,
    calls: step.calls,
  }
}

/** Acts on another process of this machine: a page opened from elsewhere may not. */
function loopbackOnly(scope: WireScope, what: string): void {
  if (!scope.loopback)
    throw new HarnessError('LOOPBACK_ONLY', `${what} is allowed to a client on this machine only`, {})
}

const id = { pattern: '^[A-Za-z0-9_.:-]+$' } as const
const sessionId = S.text({ ...id, description: 'a session id' })
const route = { provider: S.string(), model: S.string() }
const attachOptions = { ...route, preset: S.string({ description: 'the agent preset (`preset/list` names them)' }) }
const confirm = {
  type: 'boolean',
  description: 'the person confirmed a widening (web: required for a less restrictive mode)',
} as const
const promptParams = S.object(
  {
    sessionId,
    text: S.string(),
    attachments: S.typed<AttachmentInput[]>({ type: 'array' }),
    confirm: {
      ...confirm,
      description: 'the person confirmed a /command that widens the session (web: required, as for `session/mode`)',
    },
  },
  ['sessionId', 'text'],
)

const SESSION_ERRORS = ['SESSION_NOT_FOUND', 'SESSION_LEASED', 'NO_PERSISTENCE'] as const
const ATTACHED = ['SESSION_NOT_ATTACHED'] as const
const PROMPT_ERRORS = [
  ...ATTACHED,
  'ATTACHMENT_INVALID',
  'ATTACHMENT_PATH_REFUSED',
  'ATTACHMENT_TOO_LARGE',
  'ATTACHMENT_UNREADABLE',
  'SANDBOX_MODE_UNCONFIRMED',
] as const
const PAGE = 'the browser page asks it; an RPC client has `dsh config`, `dsh models` and its own process'

function invalid(message: string): HarnessError {
  return new HarnessError('INVALID_PARAMS', message, {})
}

function attach(scope: WireScope, params: ModelRoute & { preset?: string | undefined }) {
  return {
    model: scope.model({
      ...(params.provider ? { provider: params.provider } : {}),
      ...(params.model ? { model: params.model } : {}),
    }),
    ...(params.preset ? { preset: params.preset } : {}),
  }
}

function presetField(agent: Agent): { preset?: string } {
  return agent.preset === undefined ? {} : { preset: agent.preset }
}

/**
 * A widening from the page is the person's act: the page asks them first and says so with `confirm`.
 * The same holds for a /command that widens (`/permissions danger-full-access`, `never`, `allow RULE`)
 * whichever route carries it. An RPC client is the program that started this dsh over stdio; no tool
 * process can reach that wire.
 */
function requireConfirmed(
  scope: WireScope,
  confirmed: boolean | undefined,
  widens: () => boolean,
  facts: { sessionId: string; mode?: string; command?: string },
): void {
  if (scope.wire !== 'web' || confirmed === true || !widens()) return
  const what = facts.mode !== undefined ? `switching to "${facts.mode}"` : `${facts.command?.trim()}`
  throw new HarnessError(
    'SANDBOX_MODE_UNCONFIRMED',
    `${what} widens what the session may do; ask the person, then send "confirm": true`,
    facts,
  )
}

/** The agent of a session the call drives: attached, or (remote clients) resumed on first use. */
async function driven(host: SessionHost, sessionId: string, scope: WireScope): Promise<Agent> {
  return scope.remote ? host.resume(sessionId) : host.agent(sessionId)
}

async function prompt(
  host: SessionHost,
  params: FromSchema<typeof promptParams>,
  scope: WireScope,
  kind: 'followup' | 'steer',
): Promise<PromptResult> {
  const { sessionId, text } = params
  const attachments = parseAttachments(params.attachments)
  if (!text.trim() && attachments.length === 0) throw invalid('"text" must be a non-empty string')
  await driven(host, sessionId, scope)
  if (scope.remote && host.isCommand(text)) {
    requireConfirmed(scope, params.confirm, () => host.commandWidens(sessionId, text), { sessionId, command: text })
    // A /command (also one typed while a turn runs) runs outside any turn; its outcome is the answer,
    // not a log entry. An unknown one is refused and nothing reaches the model.
    const outcome = await host.command(sessionId, text)
    return { sessionId, command: toJsonSafe({ sessionId, ...outcome }) as unknown as CommandRunResult }
  }
  const typed = scope.remote ? host.typedText(text) : text
  const receipt = await host.prompt(sessionId, { text: typed, attachments }, { kind, allowPaths: !scope.remote })
  return { sessionId, messageId: receipt.id, target: receipt.target }
}

export const operations = {
  'session/create': op({
    summary: 'Creates a session in `cwd` (default: the wire’s) with an agent attached.',
    params: S.object({ cwd: S.string(), ...attachOptions }),
    errors: ['PRESET_NOT_FOUND', 'SESSION_HOST_CLOSING', 'LOOPBACK_ONLY'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions' },
    handler: async (host, params, scope): Promise<SessionCreateResult> => {
      const agent = await host.create({ cwd: scope.cwd(params.cwd, 'create'), ...attach(scope, params) })
      scope.attached?.(agent)
      return { sessionId: agent.session.id, cwd: agent.session.header.cwd, ...presetField(agent) }
    },
  }),
  'session/resume': op({
    summary: 'Attaches a session: the live one, or cold-resumed from persistence.',
    params: S.object({ sessionId, ...attachOptions }, ['sessionId']),
    errors: [...SESSION_ERRORS, 'SESSION_BUSY', 'PRESET_LOCKED'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/resume' },
    handler: async (host, params, scope): Promise<SessionResumeResult> => {
      const agent = await host.resume(params.sessionId, attach(scope, params))
      scope.attached?.(agent)
      const { sessionId } = params
      return { sessionId, cwd: agent.session.header.cwd, eventCount: agent.session.length, ...presetField(agent) }
    },
  }),
  'session/fork': op({
    summary: 'Forks a session (live or durable) before seq `at` and attaches the child.',
    params: S.object({ sessionId, at: S.integer({ minimum: 0 }), ...attachOptions }, ['sessionId']),
    errors: [...SESSION_ERRORS, 'SESSION_FORK_BOUNDARY', 'SESSION_FORK_OPEN_PREFIX'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/fork' },
    handler: async (host, params, scope): Promise<SessionForkResult> => {
      const child = await host.fork(params.sessionId, params.at, attach(scope, params))
      scope.attached?.(child)
      return { sessionId: child.session.id, parentSessionId: params.sessionId, cwd: child.session.header.cwd }
    },
  }),
  'session/usage': op({
    summary:
      "A session's usage and cost folded from its log (per model: tokens by kind, cost, requests; time waiting on the model and tools) and how full its next request's context is.",
    params: S.object({ sessionId }, ['sessionId']),
    errors: SESSION_ERRORS,
    rpc: true,
    web: { method: 'GET', path: '/api/sessions/:sessionId/usage' },
    handler: async (host, params): Promise<SessionUsageResult> => host.usage(params.sessionId),
  }),
  'session/status-line': op({
    summary:
      "The user's status line for an attached session: the first line of `statusline.command`'s output (it reads the session's state as JSON on stdin), or why there is none.",
    params: S.object({ sessionId }, ['sessionId']),
    errors: ATTACHED,
    rpc: true,
    web: { method: 'GET', path: '/api/sessions/:sessionId/status-line' },
    handler: async (host, params): Promise<StatusLineResult> => host.statusLine(params.sessionId),
  }),
  'session/compare': op({
    summary:
      'A fork beside the session it was forked from, each from the fork point on: requests, tokens, cost, tool calls, files changed, the final answer (what-if branches side by side).',
    params: S.object({ sessionId }, ['sessionId']),
    errors: [...SESSION_ERRORS, 'NOT_A_FORK'],
    rpc: true,
    web: { method: 'GET', path: '/api/sessions/:sessionId/compare' },
    handler: async (host, params): Promise<CompareResult> => host.compare(params.sessionId),
  }),
  'session/steps': op({
    summary:
      "A session's model requests as steps, folded from its log (nothing runs): model, prompt size, tools, message count, the last message, the answer, tool calls and results.",
    params: S.object({ sessionId }, ['sessionId']),
    errors: SESSION_ERRORS,
    rpc: true,
    web: { method: 'GET', path: '/api/sessions/:sessionId/steps' },
    handler: async (host, params): Promise<StepsResult> => ({
      steps: (await host.steps(params.sessionId)).map((step, index) => stepSummary(step, index)),
    }),
  }),
  'session/step': op({
    summary:
      'One step of `session/steps` whole: the exact request the model saw (system prompt, tool schemas, messages), its answer and tool calls.',
    params: S.object(
      {
        sessionId,
        index: S.integer({ minimum: 0, description: 'the step (from 0), as `session/steps` numbers them' }),
      },
      ['sessionId', 'index'],
    ),
    errors: [...SESSION_ERRORS, 'STEP_UNKNOWN'],
    rpc: true,
    web: { method: 'GET', path: '/api/sessions/:sessionId/step' },
    handler: async (host, params): Promise<StepResult> => {
      const steps = await host.steps(params.sessionId)
      const step = steps[params.index]
      if (!step)
        throw new HarnessError('STEP_UNKNOWN', `session ${params.sessionId} has steps 0 to ${steps.length - 1}`, {
          index: params.index,
        })
      const { request, answer, calls } = step
      return toJsonSafe({ index: params.index, ...request, answer, calls }) as unknown as StepResult
    },
  }),
  'session/rewind-points': op({
    summary: 'The messages of a session a rewind can go back to, each with what its turn changed.',
    params: S.object({ sessionId }, ['sessionId']),
    errors: [...SESSION_ERRORS, 'NOT_AVAILABLE'],
    rpc: true,
    web: { method: 'GET', path: '/api/sessions/:sessionId/rewind' },
    handler: async (host, params): Promise<RewindPointsResult> => ({
      points: toJsonSafe(await host.rewindPoints(params.sessionId)) as unknown as RewindPointView[],
    }),
  }),
  'session/rewind': op({
    summary:
      'Rewinds an idle session to user message `point`: `files` (the workspace back), `conversation` (a fork before the message, attached) or `both`.',
    params: S.object(
      {
        sessionId,
        point: S.integer({ minimum: 1, description: 'the user message number (`session/rewind-points`)' }),
        mode: S.oneOf(['both', 'files', 'conversation'], 'what goes back (default both)'),
        overwrite: {
          type: 'boolean',
          description: 'also write back files someone else changed since the session last saw them',
        } as const,
        ...attachOptions,
      },
      ['sessionId', 'point'],
    ),
    errors: [
      ...ATTACHED,
      ...SESSION_ERRORS,
      'SESSION_BUSY',
      'REWIND_POINT_UNKNOWN',
      'REWIND_NO_CHECKPOINT',
      'REWIND_UNAVAILABLE',
      'NOT_AVAILABLE',
    ],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/rewind' },
    handler: async (host, params, scope): Promise<SessionRewindResult> => {
      await driven(host, params.sessionId, scope)
      const result = await host.rewind(
        params.sessionId,
        {
          point: params.point,
          mode: params.mode ?? 'both',
          ...(params.overwrite !== undefined ? { overwrite: params.overwrite } : {}),
        },
        attach(scope, params),
      )
      if (result.previousSessionId) scope.attached?.(host.agent(result.sessionId))
      return toJsonSafe(result) as unknown as SessionRewindResult
    },
  }),
  'session/list': op({
    summary: 'Durable and attached sessions, newest first, a page at a time, without live status.',
    params: S.object({ cursor: S.string(), limit: S.integer({ minimum: 1 }) }),
    errors: [],
    rpc: true,
    web: { off: 'the page reads `session/rows` (every row with its live status) and gets changes on the host stream' },
    handler: async (host, params): Promise<SessionListResult> => {
      const offset = params.cursor === undefined ? 0 : Number(params.cursor)
      if (!Number.isInteger(offset) || offset < 0) throw invalid('"cursor" is not a cursor this server gave')
      const limit = params.limit ?? 100
      const all = (await host.list()).map(({ status: _status, ...row }) => row)
      const data = all.slice(offset, offset + limit)
      const next = offset + limit
      return next < all.length ? { data, nextCursor: String(next) } : { data }
    },
  }),
  'session/rows': op({
    summary: 'Every session row with its live status (what the page’s list shows).',
    params: NoParams,
    errors: [],
    rpc: { off: 'RPC pages with `session/list` and reports status by `agent/status` notifications' },
    web: { method: 'GET', path: '/api/sessions' },
    handler: async (host): Promise<{ sessions: SessionSummary[] }> => ({ sessions: await host.list() }),
  }),
  'session/rename': op({
    summary: 'Names a session durably (a `session/title` event by the user).',
    params: S.object({ sessionId, title: S.string() }, ['sessionId', 'title']),
    errors: [...SESSION_ERRORS, 'INVALID_TITLE', 'NOT_AVAILABLE'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/rename' },
    handler: async (host, params) => ({
      sessionId: params.sessionId,
      title: await host.rename(params.sessionId, params.title),
    }),
  }),
  'session/delete': op({
    summary: 'Deletes a durable session (released first when attached).',
    params: S.object({ sessionId }, ['sessionId']),
    errors: [...SESSION_ERRORS, 'SESSION_LEASED'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/delete' },
    handler: async (host, params) => {
      const report = await host.remove(params.sessionId)
      return { removed: report.removed, ...(report.blobs ? { blobs: report.blobs } : {}) }
    },
  }),
  'session/export': op({
    summary:
      'A session as a file: the Markdown transcript, the JSONL log, or one self-contained HTML page that renders the transcript (toolOutput: drop leaves the tool outputs out).',
    params: S.object(
      {
        sessionId,
        format: S.oneOf(['md', 'jsonl', 'html'] as const),
        toolOutput: S.oneOf(['keep', 'drop'] as const, 'html: drop leaves the tool outputs out (the calls stay)'),
      },
      ['sessionId'],
    ),
    errors: ['SESSION_NOT_FOUND', 'NOT_AVAILABLE'],
    rpc: true,
    web: { method: 'GET', path: '/api/sessions/:sessionId/export', file: true },
    handler: (host, params): Promise<WireFile> =>
      exportFile(host, params.sessionId, params.format ?? 'md', {
        ...(params.toolOutput === 'drop' ? { toolOutput: false } : {}),
      }),
  }),
  'session/search': op({
    summary: 'Full-text search over the events of every durable session.',
    params: S.object({ q: S.text({ description: 'words to find' }), limit: S.integer({ minimum: 1 }) }, ['q']),
    errors: ['NOT_AVAILABLE'],
    rpc: true,
    web: { method: 'GET', path: '/api/search' },
    handler: async (host, params, scope): Promise<{ hits: SearchHitView[] }> => ({
      hits: await searchSessions(scope.ctx, host, params.q, params.limit),
    }),
  }),
  'agents/list': op({
    summary:
      'Every agent running on this machine or the shared store (sessions with a live lease: chats, runs, web and rpc sessions, subagents) and the background runs, with state, model, cost and last activity.',
    params: NoParams,
    errors: [],
    rpc: true,
    web: { method: 'GET', path: '/api/agents' },
    handler: async (_host, _params, scope): Promise<{ agents: AgentRow[] }> => ({
      agents: await listAgents(scope.ctx),
    }),
  }),
  'agents/respond': op({
    summary:
      "Answers the approval a background run of this machine waits on (through its attach socket): `decision` for `requestId` (from the agent's `approval`).",
    params: S.object(
      {
        sessionId,
        requestId: S.text(id),
        decision: S.oneOf(['allowed-once', 'rejected']),
      },
      ['sessionId', 'requestId', 'decision'],
    ),
    errors: ['AGENT_NOT_ATTACHABLE', 'APPROVAL_NOT_FOUND', 'LOOPBACK_ONLY'],
    rpc: true,
    web: { method: 'POST', path: '/api/agents/:sessionId/approval' },
    handler: async (_host, params, scope): Promise<Record<string, never>> => {
      loopbackOnly(scope, 'answering another process’s approval')
      await attachCall(launcherHome(scope.ctx), params.sessionId, 'approval/respond', {
        requestId: params.requestId,
        decision: params.decision,
        ...(params.decision === 'rejected'
          ? { reason: `rejected from ${scope.wire === 'web' ? 'the web page' : 'an rpc client'}` }
          : {}),
      })
      return {}
    },
  }),
  'agents/stop': op({
    summary:
      'Stops a running agent of this machine (SIGTERM to its process: the turn is cancelled and the session saved).',
    params: S.object({ sessionId }, ['sessionId']),
    errors: ['SESSION_NOT_FOUND', 'AGENT_NOT_RUNNING', 'AGENT_ELSEWHERE', 'AGENT_IS_CHILD', 'LOOPBACK_ONLY'],
    rpc: true,
    web: { method: 'POST', path: '/api/agents/:sessionId/stop' },
    handler: async (_host, params, scope): Promise<{ pid: number }> => {
      loopbackOnly(scope, 'stopping another process')
      return stopAgent(agentNamed(await listAgents(scope.ctx), params.sessionId))
    },
  }),
  'workspaces/list': op({
    summary: 'Directories sessions ran in, most recently used first, and whether the client may choose one.',
    params: NoParams,
    errors: [],
    rpc: { off: 'the page’s directory picker; an RPC client names any cwd in `session/create`' },
    web: { method: 'GET', path: '/api/workspaces' },
    handler: (host, _params, scope) => workspacesView(host, scope.loopback),
  }),
  'preset/list': op({
    summary: 'The agent presets a new session in `cwd` can take, and the default one.',
    params: S.object({ cwd: S.string() }),
    errors: [],
    rpc: true,
    web: { method: 'GET', path: '/api/presets' },
    handler: async (host, params, scope): Promise<PresetListResult> => {
      const fallback = host.defaultPreset()
      const data = await host.presets(scope.cwd(params.cwd, 'read'))
      return fallback === undefined ? { data } : { data, default: fallback }
    },
  }),
  prompt: op({
    summary: 'Queues a prompt for the session’s next turn; answers with the receipt at once.',
    params: promptParams,
    errors: PROMPT_ERRORS,
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/prompt', largeBody: true },
    handler: (host, params, scope) => prompt(host, params, scope, 'followup'),
  }),
  steer: op({
    summary: 'Queues a prompt for the next step of the running turn (or the next turn).',
    params: promptParams,
    errors: PROMPT_ERRORS,
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/steer', largeBody: true },
    handler: (host, params, scope) => prompt(host, params, scope, 'steer'),
  }),
  cancel: op({
    summary: 'Cancels the session’s running activity; answers once its agent is idle.',
    params: S.object({ sessionId }, ['sessionId']),
    errors: ATTACHED,
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/cancel' },
    handler: async (host, params, scope): Promise<CancelResult> => {
      await host.agent(params.sessionId).cancel(scope.cancelReason)
      return { sessionId: params.sessionId }
    },
  }),
  'command/run': op({
    summary:
      'Runs a human /command (`/compact`, `/plan on`) for an attached session, without a model turn; `/new` and `/exit` answer `data.action` (`new-session`, `exit`) for the client to act on.',
    params: S.object(
      {
        sessionId,
        line: S.text(),
        confirm: { ...confirm, description: 'the person confirmed a /command that widens the session (web: required)' },
      },
      ['sessionId', 'line'],
    ),
    errors: [...ATTACHED, 'COMMANDS_UNAVAILABLE', 'SANDBOX_MODE_UNCONFIRMED'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/command' },
    handler: async (host, params, scope): Promise<CommandRunResult> => {
      await driven(host, params.sessionId, scope)
      requireConfirmed(scope, params.confirm, () => host.commandWidens(params.sessionId, params.line), {
        sessionId: params.sessionId,
        command: params.line,
      })
      return { sessionId: params.sessionId, ...(await host.command(params.sessionId, params.line)) }
    },
  }),
  'session/mode': op({
    summary:
      'Switches an attached session’s permission mode (logged as `sandbox/mode`). On the web a widening needs `confirm: true`.',
    params: S.object(
      {
        sessionId,
        mode: S.text({ description: 'a permission preset name' }),
        confirm,
      },
      ['sessionId', 'mode'],
    ),
    errors: [...ATTACHED, 'NO_SANDBOX_POLICY', 'SANDBOX_MODE_INVALID', 'SANDBOX_MODE_UNCONFIRMED'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/mode' },
    handler: (host, params, scope) => {
      requireConfirmed(scope, params.confirm, () => host.widensMode(params.sessionId, params.mode), {
        sessionId: params.sessionId,
        mode: params.mode,
      })
      return { sessionId: params.sessionId, mode: host.setMode(params.sessionId, params.mode) }
    },
  }),
  'session/preset': op({
    summary: 'Switches an attached session to another agent preset, before its first turn.',
    params: S.object({ sessionId, preset: S.text({ description: 'an agent preset name' }) }, ['sessionId', 'preset']),
    errors: [...ATTACHED, 'PRESET_LOCKED', 'NO_PRESETS', 'PRESET_NOT_FOUND', 'PRESET_INVALID', 'PRESET_UNTRUSTED'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/preset' },
    handler: async (host, params) => ({
      sessionId: params.sessionId,
      preset: await host.setPreset(params.sessionId, params.preset),
    }),
  }),
  'inbox/splice': op({
    summary: 'Edits the queued input of an attached session: removes and inserts texts.',
    params: S.object(
      {
        sessionId,
        target: S.oneOf(['next-step', 'next-turn']),
        start: S.integer({ minimum: 0 }),
        deleteCount: S.integer({ minimum: 0 }),
        texts: S.typed<string[]>({ type: 'array', items: { type: 'string' } }),
      },
      ['sessionId', 'target', 'start', 'deleteCount'],
    ),
    errors: ATTACHED,
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/inbox' },
    handler: (host, params) => {
      const agent = host.agent(params.sessionId)
      const removed = agent.spliceInbox(params.target, params.start, params.deleteCount, ...(params.texts ?? []))
      return { removed: removed.map((item) => item.id) }
    },
  }),
  'inbox/run': op({
    summary: 'Runs the input left queued when a resumed session was last closed (it waits until asked).',
    params: S.object({ sessionId }, ['sessionId']),
    errors: ATTACHED,
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/inbox/run' },
    handler: (host, params) => ({ started: host.agent(params.sessionId).runQueued() }),
  }),
  'job/kill': op({
    summary: 'Kills one of the session’s background jobs and waits until it is gone.',
    params: S.object({ sessionId, jobId: S.text(id) }, ['sessionId', 'jobId']),
    errors: [...ATTACHED, 'JOB_NOT_FOUND'],
    rpc: true,
    web: { method: 'POST', path: '/api/sessions/:sessionId/jobs/:jobId/kill' },
    handler: async (host, params) => {
      await host.killJob(params.sessionId, params.jobId)
      return {}
    },
  }),
  'job/output': op({
    summary: 'A person’s read of a job’s output from byte `from` (the model’s cursor stays).',
    params: S.object({ sessionId, jobId: S.text(id), from: S.integer({ minimum: 0 }) }, ['sessionId', 'jobId']),
    errors: [...ATTACHED, 'JOB_NOT_FOUND'],
    rpc: true,
    web: { method: 'GET', path: '/api/sessions/:sessionId/jobs/:jobId/output' },
    handler: (host, params): JobOutputView => {
      const read = host.jobOutput(params.sessionId, params.jobId, params.from ?? 0)
      const { text, next, lost, job } = read
      return { text, next, lost, status: job.status, ...(job.summary ? { summary: job.summary } : {}) }
    },
  }),
  'approval/respond': op({
    summary: 'Answers a pending approval; the first answer wins.',
    params: S.object(
      {
        requestId: S.text(id),
        decision: S.oneOf(['allowed-once', 'rejected']),
        reason: S.string({ description: 'shown to the model when the action does not run' }),
        grant: S.oneOf(['session'], 'with allowed-once: also allow the session’s later same-tool questions'),
        rule: S.object(
          {
            text: S.text({ description: 'a permission rule covering this call, e.g. the suggestedRule' }),
            scope: S.oneOf(['session', 'user', 'project'], 'where the rule is kept'),
          },
          ['text', 'scope'],
        ),
      },
      ['requestId', 'decision'],
    ),
    errors: ['APPROVAL_NOT_FOUND'],
    rpc: true,
    web: { method: 'POST', path: '/api/approvals/:requestId' },
    handler: (host, params): Record<string, never> => {
      const { requestId, decision, reason, grant, rule } = params
      if (grant !== undefined && decision !== 'allowed-once')
        throw invalid('"grant" can only be "session", with "decision": "allowed-once"')
      if (rule !== undefined && decision !== 'allowed-once')
        throw invalid('"rule" goes with "decision": "allowed-once"')
      host.respond(requestId, {
        decision,
        ...(reason === undefined ? {} : { reason }),
        ...(grant ? { grant } : {}),
        ...(rule ? { rule } : {}),
      })
      return {}
    },
  }),
  'question/respond': op({
    summary: 'Answers a pending `ask_user` question; the first answer wins.',
    params: S.object({ questionId: S.text(id), answer: S.string() }, ['questionId', 'answer']),
    errors: ['QUESTION_NOT_FOUND'],
    rpc: true,
    web: { method: 'POST', path: '/api/questions/:questionId' },
    handler: (host, params): Record<string, never> => {
      host.answerQuestion(params.questionId, params.answer)
      return {}
    },
  }),
  'client-modules/list': op({
    summary: 'The browser-side plugins the rows of the tree contribute.',
    params: NoParams,
    errors: [],
    rpc: { off: 'browser-side plugins are for the page only' },
    web: { method: 'GET', path: '/api/client-modules' },
    handler: (_host, _params, scope) => ({ modules: scope.page?.clientModules() ?? [] }),
  }),
  'settings/get': op({
    summary: 'Credential names (set or not, never values) and every declared setting with its source.',
    params: NoParams,
    errors: [],
    rpc: { off: PAGE },
    web: { method: 'GET', path: '/api/settings' },
    handler: (_host, _params, scope) => settingsView(scope.ctx, scope.page?.credentialNames),
  }),
  'settings/set': op({
    summary: 'Sets a setting in the user file (`dsh config set`); nothing is written when the value is invalid.',
    params: S.object({ key: S.text({ pattern: '^[a-z][a-zA-Z0-9.-]*$' }), value: {} }, ['key', 'value']),
    errors: ['NO_SETTINGS', 'CONFIG_SETTINGS_INVALID', 'CONFIG_SETTING_UNKNOWN'],
    rpc: { off: PAGE },
    web: { method: 'PUT', path: '/api/settings/values/:key' },
    handler: (_host, params, scope) => settingsOf(scope.ctx).set(params.key, params.value, { scope: 'user' }),
  }),
  'settings/unset': op({
    summary: 'Removes a setting from the user file.',
    params: S.object({ key: S.text({ pattern: '^[a-z][a-zA-Z0-9.-]*$' }) }, ['key']),
    errors: ['NO_SETTINGS'],
    rpc: { off: PAGE },
    web: { method: 'DELETE', path: '/api/settings/values/:key' },
    handler: (_host, params, scope) => ({ removed: settingsOf(scope.ctx).unset(params.key, { scope: 'user' }) }),
  }),
  'credential/set': op({
    summary: 'Stores a credential; the answer says that it is set, never what it is.',
    params: S.object({ name: S.text({ pattern: '^[A-Z][A-Z0-9_]*$' }), value: S.text() }, ['name', 'value']),
    errors: ['NO_CREDENTIALS'],
    rpc: { off: PAGE },
    web: { method: 'PUT', path: '/api/settings/credentials/:name' },
    handler: async (_host, params, scope) => {
      await credentialsOf(scope.ctx).set(params.name, params.value)
      return { name: params.name, set: true }
    },
  }),
  'credential/delete': op({
    summary: 'Deletes a stored credential.',
    params: S.object({ name: S.text({ pattern: '^[A-Z][A-Z0-9_]*$' }) }, ['name']),
    errors: ['NO_CREDENTIALS'],
    rpc: { off: PAGE },
    web: { method: 'DELETE', path: '/api/settings/credentials/:name' },
    handler: async (_host, params, scope) => ({
      name: params.name,
      removed: await credentialsOf(scope.ctx).delete(params.name),
    }),
  }),
  'models/list': op({
    summary: 'The providers (usable or not) and the models of the usable ones: what `dsh models` lists.',
    params: NoParams,
    errors: ['CONFIG_NO_LLM'],
    rpc: { off: PAGE },
    web: { method: 'GET', path: '/api/models' },
    handler: (_host, _params, scope) => modelsView(scope.ctx),
  }),
  ...trustOperations,
} satisfies Record<string, Operation<JsonSchema, unknown>>

export type Operations = typeof operations
export type OperationName = keyof Operations
/** The params an operation takes (read off its schema). */
export type OperationParams<N extends OperationName> = FromSchema<Operations[N]['params']>
/** What an operation answers. */
export type OperationResult<N extends OperationName> = Awaited<ReturnType<Operations[N]['handler']>>

/** The operations `dsh rpc` serves, as methods of the same name. */
export type RpcOperationName = { [N in OperationName]: Operations[N]['rpc'] extends true ? N : never }[OperationName]

/** The operations the web host serves. */
export type WebOperationName = {
  [N in OperationName]: Operations[N]['web'] extends WebRoute ? N : never
}[OperationName]

/** Runs an operation: validates `params` against its schema (INVALID_PARAMS), then calls its handler. */
export async function runOperation(
  name: OperationName,
  host: SessionHost,
  params: Record<string, unknown>,
  scope: WireScope,
): Promise<unknown> {
  const operation = operations[name] as unknown as Operation
  checkParams(operation.params, params)
  return operation.handler(host, params as never, scope)
}
