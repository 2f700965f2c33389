// @dsh/agent/approval: the approval seam `ctx.approval`. One question, one answer: allowed-once, rejected,
// cancelled or unavailable. Fails closed: no answerer, a throwing answerer or a throwing hook all
// become `unavailable`, which callers treat as "do not run". The one standing permission is a session
// grant a person gives with an `allowed-once` answer (`grant: 'session'`): it is logged in the decision
// and read back from the log when the session is restored.
import { type Context, deepFreeze, HarnessError, type JsonValue, Service, toJsonSafe } from '@dsh/kernel'
import type {} from '@dsh/session'

declare module 'cordis' {
  interface Context {
    approval: ApprovalService
  }
  interface Events {
    /**
     * Every question passes through this waterfall before the answerer. A listener may answer itself
     * (a standing rule such as "always allow `npm test`") by returning without calling `next()`, or
     * return `next()`. A throwing listener makes the answer `unavailable` (fail closed). Not consulted
     * when the session policy is `never`.
     */
    'approval/request'(question: ApprovalQuestion, next: () => Promise<ApprovalAnswer>): Promise<ApprovalAnswer>
    /**
     * Dispatched with `serial` (awaited) before anyone is asked; the agent loop appends the durable
     * `approval/asked` session event here. A throwing listener makes `request()` throw.
     */
    'approval/asked'(asked: ApprovalAsked): void | Promise<void>
    /**
     * Asked (with `bail`) for a question about a tool call that names no `suggestedRule`: the narrowest
     * permission rule covering the call, which surfaces offer as "allow similar" (the permissions row).
     */
    'approval/suggest-rule'(request: ApprovalRequest): string | undefined
    /** Dispatched with `serial` after the decision; the loop appends `approval/decided`. Throws propagate. */
    'approval/decided'(decided: ApprovalDecided): void | Promise<void>
  }
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /** A question was put (the agent loop logs it in the open turn of `sessionId`). */
    'approval/asked': ApprovalAsked
    /** The question was settled, and by whom. */
    'approval/decided': ApprovalDecided
  }
}

/** The four one-shot outcomes. Only `allowed-once` lets the action run, and only this once. */
export type ApprovalDecision = 'allowed-once' | 'rejected' | 'cancelled' | 'unavailable'

/**
 * Per-session policy. `ask`: questions go to the hooks and the answerer. `never`: nobody is asked and
 * every question is `rejected` at once (a delegated child, or a preset that must not prompt). Auto-allow
 * is not a policy: it comes from a preset whose tool policies do not ask, or from an answerer that says
 * `allowed-once` (headless `--yes`).
 */
export type ApprovalPolicy = 'ask' | 'never'

/** Who settled a question (recorded in `approval/decided`); `grant`: a session grant answered it. */
export type ApprovalDecider = 'policy' | 'hook' | 'answerer' | 'none' | 'signal' | 'grant'

/**
 * A person's standing "allow" for the rest of a session: later questions of the same session about the
 * same tool and kind are answered `allowed-once` (by `grant`) without asking. Recorded in the
 * `approval/decided` that created it, so a resumed session keeps it.
 */
export interface ApprovalGrant {
  readonly scope: 'session'
  readonly toolName?: string
  readonly kind?: string
}

/** What a caller asks. JSON data only; `details` is free-form context for the surface (e.g. a diff). */
export interface ApprovalRequest {
  /** The session the question belongs to; selects the policy. */
  sessionId?: string
  /** The tool call being approved, when the question is about one. */
  toolCallId?: string
  toolName?: string
  /** One line a person can decide on, e.g. "Run `rm -rf build`". */
  summary: string
  /** Why approval is needed (the policy's reason). */
  reason?: string
  /** What is asked for: `tool` (a pre-execute ask) or a consumer-specific kind such as `escalation`. */
  kind?: string
  details?: JsonValue
  /**
   * The narrowest permission rule that covers this action (`Bash(npm test:*)`, `Edit(src/**)`), which a
   * surface offers as "allow similar"; set by the permissions row.
   */
  suggestedRule?: string
}

/** Where an "allow similar" rule is kept: this session (logged), the user's settings, the project's. */
export type RuleScope = 'session' | 'user' | 'project'

/** A permission rule a person chose to keep with an allow. */
export interface RememberedRule {
  text: string
  scope: RuleScope
}

/** A request as hooks and answerers see it: frozen, with an id, the effective policy and a time. */
export interface ApprovalQuestion extends Readonly<ApprovalRequest> {
  readonly requestId: string
  readonly policy: ApprovalPolicy
  readonly askedAt: number
}

/** An answer; `reason` is shown to the model when the action does not run. */
export interface ApprovalAnswer {
  decision: ApprovalDecision
  reason?: string
  /** With `allowed-once` and a question of a session: also allow its later same-tool same-kind questions. */
  grant?: 'session'
  /** With `allowed-once`: also allow what this rule covers from now on, kept where `scope` says. */
  rule?: RememberedRule
}

export type ApprovalAsked = ApprovalQuestion

export interface ApprovalDecided {
  readonly requestId: string
  readonly sessionId?: string
  readonly toolCallId?: string
  readonly toolName?: string
  readonly decision: ApprovalDecision
  readonly by: ApprovalDecider
  readonly reason?: string
  /** The session grant this answer gave (only on an `allowed-once` answer by the answerer). */
  readonly grant?: ApprovalGrant
  /** The rule this answer kept (only on an `allowed-once` answer by the answerer). */
  readonly rule?: RememberedRule
  readonly decidedAt: number
}

/**
 * Answers questions (a terminal prompt, the web UI, ACP, headless). Must settle; should stop waiting
 * when `signal` aborts. May return a bare decision or an answer with a reason. Throwing counts as
 * `unavailable`.
 */
export type ApprovalAnswerer = (
  question: ApprovalQuestion,
  signal: AbortSignal,
) => ApprovalDecision | ApprovalAnswer | Promise<ApprovalDecision | ApprovalAnswer>

/** An answerer that always gives the same decision: headless uses `unavailable`, or `allowed-once` with `--yes`. */
export function createStaticAnswerer(decision: ApprovalDecision, reason?: string): ApprovalAnswerer {
  return () => (reason === undefined ? { decision } : { decision, reason })
}

export interface ApprovalConfig {
  /** The policy of sessions without one set by `setPolicy`. Default `ask`. */
  defaultPolicy?: ApprovalPolicy
}

const DECISIONS: readonly ApprovalDecision[] = ['allowed-once', 'rejected', 'cancelled', 'unavailable']
const POLICIES: readonly ApprovalPolicy[] = ['ask', 'never']

function checkPolicy(policy: unknown, where: string): ApprovalPolicy {
  if (!POLICIES.includes(policy as ApprovalPolicy)) {
    throw new HarnessError('INVALID_APPROVAL_POLICY', `${where}: approval policy must be "ask" or "never"`, {
      policy: toJsonSafe(policy),
    })
  }
  return policy as ApprovalPolicy
}

function normalizeAnswer(value: unknown): ApprovalAnswer {
  const answer = (typeof value === 'string' ? { decision: value } : value) as ApprovalAnswer | undefined
  if (!answer || !DECISIONS.includes(answer.decision)) {
    return { decision: 'unavailable', reason: `approval answered with an invalid decision: ${JSON.stringify(value)}` }
  }
  return {
    decision: answer.decision,
    ...(answer.reason === undefined ? {} : { reason: answer.reason }),
    // Only an allow can stand: a rejection for the session would be a policy, not an answer.
    ...(answer.grant === 'session' && answer.decision === 'allowed-once' ? { grant: 'session' as const } : {}),
    ...(answer.decision === 'allowed-once' && rememberedRule(answer.rule) ? { rule: rememberedRule(answer.rule) } : {}),
  }
}

const SCOPES: readonly RuleScope[] = ['session', 'user', 'project']

function rememberedRule(value: unknown): RememberedRule | undefined {
  const rule = value as RememberedRule | undefined
  if (!rule || typeof rule.text !== 'string' || rule.text.trim() === '' || !SCOPES.includes(rule.scope))
    return undefined
  return { text: rule.text.trim(), scope: rule.scope }
}

const grantKey = (grant: { toolName?: string; kind?: string }) =>
  JSON.stringify([grant.toolName ?? '', grant.kind ?? ''])

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

export class ApprovalService extends Service {
  static readonly provide = 'approval'
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly answerers: ApprovalAnswerer[] = []
  private readonly policies = new Map<string, ApprovalPolicy>()
  private readonly sessionGrants = new Map<string, Map<string, ApprovalGrant>>()
  private readonly defaultPolicy: ApprovalPolicy

  constructor(ctx: Context, config: ApprovalConfig = {}) {
    const defaultPolicy = checkPolicy(config?.defaultPolicy ?? 'ask', 'approval config defaultPolicy')
    super(ctx, 'approval')
    this.defaultPolicy = defaultPolicy
    // The log is the grants' durable home: a restored session gets back the grants its decisions gave.
    ctx.on('session/restored', (session) => {
      for (const event of session.events) {
        if (event.type === 'approval/decided' && event.data.grant) this.addGrant(session.id, event.data.grant)
      }
    })
    ctx.on('session/closed', (session) => {
      this.sessionGrants.delete(session.id)
    })
  }

  /** The session grants standing for `sessionId` (what "allow for this session" answers covered). */
  grants(sessionId: string): ApprovalGrant[] {
    return [...(this.sessionGrants.get(sessionId)?.values() ?? [])]
  }

  private addGrant(sessionId: string, grant: ApprovalGrant): void {
    const grants = this.sessionGrants.get(sessionId) ?? new Map<string, ApprovalGrant>()
    grants.set(grantKey(grant), grant)
    this.sessionGrants.set(sessionId, grants)
  }

  private grantFor(question: ApprovalQuestion): ApprovalGrant | undefined {
    if (question.sessionId === undefined) return undefined
    return this.sessionGrants.get(question.sessionId)?.get(grantKey(question))
  }

  /**
   * Registers an answerer for the lifetime of the calling plugin. The most recently registered live
   * answerer is the one asked (a surface that opens on top of another takes over until it closes).
   */
  answer(answerer: ApprovalAnswerer): () => void {
    return this.ctx.effect(() => {
      this.answerers.push(answerer)
      return () => {
        const index = this.answerers.lastIndexOf(answerer)
        if (index >= 0) this.answerers.splice(index, 1)
      }
    }, 'approval.answer()')
  }

  /** True when some answerer is registered (without one every `ask` question is `unavailable`). */
  get hasAnswerer(): boolean {
    return this.answerers.length > 0
  }

  /**
   * Sets (or with `undefined` clears) a session's policy. The permission-preset owner logs the change
   * in the session and calls this again on resume; this service keeps no durable state.
   * Throws `INVALID_APPROVAL_POLICY` for anything but `ask` / `never`.
   */
  setPolicy(sessionId: string, policy: ApprovalPolicy | undefined): void {
    if (policy === undefined) this.policies.delete(sessionId)
    else this.policies.set(sessionId, checkPolicy(policy, `setPolicy(${sessionId})`))
  }

  /** The effective policy of a session (its own, else the configured default). */
  policy(sessionId?: string): ApprovalPolicy {
    return (sessionId === undefined ? undefined : this.policies.get(sessionId)) ?? this.defaultPolicy
  }

  /**
   * Asks once. Sequence: `approval/asked` (awaited) -> policy `never` ? rejected : `approval/request`
   * waterfall -> newest answerer (none: unavailable) -> `approval/decided` (awaited). An aborted
   * `signal` settles the question as `cancelled` at once (the answerer sees the abort and its late
   * answer is ignored). Never throws for answerer or hook failures (those are `unavailable`); throws
   * only when an `approval/asked` / `approval/decided` listener throws (the audit could not be recorded).
   */
  async request(request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalDecision> {
    return (await this.ask(request, signal)).decision
  }

  /**
   * `request()` returning the whole decided record (`approval/decided` data): the decision plus who
   * decided and why, so a caller can show the model a person's reason for rejecting.
   */
  async ask(request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalDecided> {
    const suggested =
      request.suggestedRule ??
      (request.toolCallId === undefined ? undefined : this.ctx.bail('approval/suggest-rule', request))
    const question: ApprovalQuestion = deepFreeze({
      ...(toJsonSafe(request) as unknown as ApprovalRequest),
      ...(typeof suggested === 'string' ? { suggestedRule: suggested } : {}),
      requestId: crypto.randomUUID(),
      policy: this.policy(request.sessionId),
      askedAt: Date.now(),
    })
    await this.ctx.serial('approval/asked', question)
    const { answer, by } = await this.decide(question, signal)
    const grant: ApprovalGrant | undefined =
      answer.grant === 'session' && by === 'answerer' && question.sessionId !== undefined
        ? {
            scope: 'session',
            ...(question.toolName === undefined ? {} : { toolName: question.toolName }),
            ...(question.kind === undefined ? {} : { kind: question.kind }),
          }
        : undefined
    const decided: ApprovalDecided = deepFreeze({
      requestId: question.requestId,
      ...(question.sessionId === undefined ? {} : { sessionId: question.sessionId }),
      ...(question.toolCallId === undefined ? {} : { toolCallId: question.toolCallId }),
      ...(question.toolName === undefined ? {} : { toolName: question.toolName }),
      decision: answer.decision,
      by,
      ...(answer.reason === undefined ? {} : { reason: answer.reason }),
      ...(grant ? { grant } : {}),
      ...(answer.rule && answer.decision === 'allowed-once' && by === 'answerer' ? { rule: answer.rule } : {}),
      decidedAt: Date.now(),
    })
    // Granted only once the decision (which carries the grant) has been recorded.
    await this.ctx.serial('approval/decided', decided)
    if (grant && question.sessionId !== undefined) this.addGrant(question.sessionId, grant)
    return decided
  }

  private async decide(
    question: ApprovalQuestion,
    signal: AbortSignal | undefined,
  ): Promise<{ answer: ApprovalAnswer; by: ApprovalDecider }> {
    if (question.policy === 'never') {
      return {
        answer: { decision: 'rejected', reason: 'the approval policy of this session is "never"' },
        by: 'policy',
      }
    }
    if (signal?.aborted) return { answer: { decision: 'cancelled', reason: 'cancelled before asking' }, by: 'signal' }
    const local = new AbortController()
    const onAbort = () => local.abort(signal?.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    let by: ApprovalDecider = 'hook'
    const inner = async (): Promise<ApprovalAnswer> => {
      // A person's standing grant answers in the person's place: after the hooks, which may still deny.
      if (this.grantFor(question)) {
        by = 'grant'
        return { decision: 'allowed-once', reason: 'allowed for this session by an earlier grant' }
      }
      const answerer = this.answerers.at(-1)
      if (!answerer) {
        by = 'none'
        return { decision: 'unavailable', reason: 'no approval answerer is registered' }
      }
      by = 'answerer'
      try {
        return normalizeAnswer(await answerer(question, local.signal))
      } catch (error) {
        return { decision: 'unavailable', reason: `the approval answerer failed: ${reasonOf(error)}` }
      }
    }
    const decided = (async () => {
      try {
        return normalizeAnswer(await this.ctx.waterfall('approval/request', question, inner))
      } catch (error) {
        by = 'hook'
        return { decision: 'unavailable', reason: `an approval/request hook failed: ${reasonOf(error)}` } as const
      }
    })()
    const cancelled = new Promise<'cancelled'>((resolve) => {
      if (local.signal.aborted) resolve('cancelled')
      local.signal.addEventListener('abort', () => resolve('cancelled'), { once: true })
    })
    try {
      const answer = await Promise.race([decided, cancelled])
      if (answer === 'cancelled')
        return { answer: { decision: 'cancelled', reason: 'the request was cancelled' }, by: 'signal' }
      return { answer, by }
    } finally {
      signal?.removeEventListener('abort', onAbort)
      // Releases a still-waiting answerer; it must not act on a settled question.
      local.abort()
    }
  }
}

export default ApprovalService
