// @dsh/world/sandbox: two seams that together decide what a tool call may change.
// `ctx.sandboxPolicy` says what is allowed (mode + writable roots, per session, one source for both
// the fs provider and bash); `ctx.sandbox` enforces it on processes (bubblewrap on Linux) and fails
// closed when it cannot. Escalation is a per-call, strictly wider, approved request.
import { existsSync, realpathSync } from 'node:fs'
import { resolve } from 'node:path'
import type {} from '@dsh/agent/approval'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/session'
import type { ProtectedPath } from './protected.js'

export { PROTECTED_NAMES, type ProtectedPath, protectedPaths } from './protected.js'

declare module 'cordis' {
  interface Context {
    sandbox: Sandbox
    sandboxPolicy: SandboxPolicyService
  }
  interface Events {
    /** After a session's mode changed (the durable `sandbox/mode` event is already appended). */
    'sandbox/mode-changed'(change: { sessionId: string; mode: SandboxMode; previous: SandboxMode }): void
  }
}

declare module '@dsh/session' {
  interface SessionEventMap {
    /**
     * The session's permission mode and network changed (`setMode`, `bind`); the latest wins on resume.
     * `requested`: what was asked when a ceiling clamped it. `bound`: the session is a child that may
     * never exceed this (its parent's mode and network when it was bound); it stands for the rest of
     * the session.
     */
    'sandbox/mode': {
      mode: SandboxMode
      network?: NetworkPolicy
      requested?: string
      bound?: { session: string; mode: SandboxMode; network: NetworkPolicy }
    }
  }
}

/**
 * What a call may change on disk. `read-only`: nothing. `workspace-write`: the workspace and the
 * temp dirs. `danger-full-access`: anything the user can (no confinement at all).
 */
export type SandboxMode = 'read-only' | 'workspace-write' | 'danger-full-access'
/** Narrowest first: a mode is strictly wider than every mode before it. */
export const SANDBOX_MODES: readonly SandboxMode[] = ['read-only', 'workspace-write', 'danger-full-access']

export function isSandboxMode(value: unknown): value is SandboxMode {
  return SANDBOX_MODES.includes(value as SandboxMode)
}

/** True when `wider` allows strictly more than `narrower`. */
export function isStrictlyWider(wider: SandboxMode, narrower: SandboxMode): boolean {
  return SANDBOX_MODES.indexOf(wider) > SANDBOX_MODES.indexOf(narrower)
}

/** The narrower of two modes (a child's mode is `narrowest(requested, parent)`). */
export function narrowest(a: SandboxMode, b: SandboxMode): SandboxMode {
  return isStrictlyWider(a, b) ? b : a
}

/** Whether confined commands reach the network: `on` (shared with the host) or `off` (own namespace). */
export type NetworkPolicy = 'on' | 'off'

export function isNetworkPolicy(value: unknown): value is NetworkPolicy {
  return value === 'on' || value === 'off'
}

/** The effective policy of one call. Paths are absolute and canonical (symlinks resolved). */
export interface SandboxPolicy {
  readonly mode: SandboxMode
  readonly workspaceRoot: string
  /** Where writes are allowed: empty for read-only; workspace + temp dirs for workspace-write. */
  readonly writableRoots: readonly string[]
  /**
   * Existing paths holding credentials that confined calls may not read (masked for bash, refused by
   * the fs tools). Empty under danger-full-access, which confines nothing.
   */
  readonly secretPaths: readonly string[]
  /**
   * Paths in the workspace a write needs a person's approval for, whatever the mode allows (agent
   * configuration, git hooks): refused by the fs fence (`FS_PROTECTED_PATH`), bound read-only for bash.
   * Empty under danger-full-access. A call a person approved gets a policy without that path.
   */
  readonly protectedPaths: readonly ProtectedPath[]
  /** Network of confined commands; danger-full-access is always `on`. */
  readonly network: NetworkPolicy
  /** Set when this policy is an approved per-call escalation (the mode it widened). */
  readonly escalatedFrom?: SandboxMode
  /** Where the tools work when it is not this machine (`on the remote machine user@host:/path over SSH`). */
  readonly location?: string
}

/** A permission preset binds a sandbox mode to an approval policy (see `@dsh/agent/approval`). */
export interface PermissionPreset {
  mode: SandboxMode
  approval: 'ask' | 'never'
  /** The network of confined commands; unset keeps the policy row's default. */
  network?: NetworkPolicy
}

/** `ctx.sandboxPolicy`. Provider: `@dsh/world/sandbox/policy`. */
export interface SandboxPolicyService {
  /**
   * The session's mode: a mode set in this process, else the last durable `sandbox/mode` event of the
   * session's log (so a resumed session keeps its mode), else the configured default.
   */
  mode(sessionId?: string): SandboxMode
  /** The session's network: a switch in this process, else its logged choice, else the default; never past its ceiling. */
  network(sessionId?: string): NetworkPolicy
  /** The full policy for a session (or for an explicit mode, e.g. an approved escalation). */
  resolve(sessionId?: string, mode?: SandboxMode): SandboxPolicy
  /**
   * Switches a session's mode: appends the durable `sandbox/mode` event (when the session is live in
   * `ctx.sessions`), applies the preset's approval policy, emits `sandbox/mode-changed`. `network`
   * (else the preset's, else the session's current one) is recorded in the same event.
   * Throws `SANDBOX_MODE_INVALID` for an unknown mode, preset or network value.
   */
  setMode(sessionId: string, mode: SandboxMode | string, options?: { network?: NetworkPolicy | string }): SandboxMode
  /** The configured presets by name. */
  presets(): Readonly<Record<string, PermissionPreset>>
  /**
   * Bounds a child session by its parent: from now on the child's mode and network are never wider
   * than the parent's (its own choice, a preset's `setMode`, clamped; a parent that narrows later
   * narrows it too). Logs the effective mode and the bound in the child's `sandbox/mode`, which keeps
   * the bound after a restart. Returns the child's effective mode; the disposer drops the live link
   * to the parent (the logged bound stays).
   */
  bind(childSessionId: string, parentSessionId: string): { mode: SandboxMode; dispose(): void }
}

/** Whether processes can be confined here, and why not. */
export interface SandboxAvailability {
  usable: boolean
  /** The mechanism (`bwrap`) or why none is usable. */
  detail: string
}

/** `ctx.sandbox`. Provider: `@dsh/world/sandbox/bwrap`. */
export interface Sandbox {
  readonly mechanism: string
  /** Probes once (cached): is confinement actually usable on this machine? */
  availability(): Promise<SandboxAvailability>
  /**
   * Wraps `argv` so that it runs under `policy`. `danger-full-access` returns `argv` unchanged.
   * Throws `SANDBOX_UNAVAILABLE` when confinement is needed but not usable: callers must not fall back
   * to running unconfined.
   */
  confine(argv: readonly string[], policy: SandboxPolicy, options: { cwd: string }): Promise<string[]>
}

/**
 * What every provider's `confine` does first: false when `policy` needs no confinement (the argv runs
 * as is), true when `sandbox` can confine, else `SANDBOX_UNAVAILABLE` (never a silent fallback).
 */
export async function requireConfinement(
  sandbox: Pick<Sandbox, 'availability'>,
  policy: SandboxPolicy,
): Promise<boolean> {
  if (policy.mode === 'danger-full-access') return false
  const available = await sandbox.availability()
  if (available.usable) return true
  throw new HarnessError('SANDBOX_UNAVAILABLE', `cannot confine the command: ${available.detail}`, {
    mode: policy.mode,
    detail: available.detail,
  })
}

/** Text the model sees when an operation was refused by the sandbox (tools add the specifics). */
export function sandboxDenialHint(policy: SandboxPolicy): string {
  const wider = SANDBOX_MODES.filter((mode) => isStrictlyWider(mode, policy.mode))
  const roots = policy.writableRoots.length ? policy.writableRoots.join(', ') : 'nothing'
  return (
    `[sandbox: denied by the ${policy.mode} sandbox; writable: ${roots}]` +
    (wider.length
      ? ` If this change is necessary, retry the same call with sandbox_permissions set to ${wider.map((m) => `"${m}"`).join(' or ')} and a one-sentence justification; the user will be asked to approve it once.`
      : '')
  )
}

export interface EscalationRequest {
  sessionId?: string
  toolCallId?: string
  toolName: string
  /** The policy the call would run under without escalation. */
  current: SandboxPolicy
  /** The mode asked for (`sandbox_permissions`). */
  requested: string
  justification?: string
  /** One line describing the action, for the approval prompt. */
  summary: string
  signal?: AbortSignal
}

/** The outcome of `requestEscalation`: a widened policy to use for this one call, or a refusal text. */
export type EscalationOutcome = { ok: true; policy: SandboxPolicy } | { ok: false; code: string; message: string }

/**
 * Asks `ctx.approval` for a strictly wider policy for one call. Refuses (never throws) when the
 * requested mode is unknown or not strictly wider, the justification is missing, no approval service
 * is installed, or the answer is anything but `allowed-once`. The approval service records the
 * question and answer (`approval/asked`, `approval/decided`, kind `escalation`).
 */
export async function requestEscalation(ctx: Context, request: EscalationRequest): Promise<EscalationOutcome> {
  const from = request.current.mode
  if (!isSandboxMode(request.requested)) {
    return refuse('SANDBOX_ESCALATION_INVALID', `sandbox_permissions must be one of ${SANDBOX_MODES.join(', ')}.`)
  }
  const to = request.requested
  if (!isStrictlyWider(to, from)) {
    return refuse(
      'SANDBOX_ESCALATION_INVALID',
      `sandbox_permissions "${to}" is not wider than the current mode "${from}"; omit it.`,
    )
  }
  if (!request.justification?.trim()) {
    return refuse('SANDBOX_ESCALATION_INVALID', 'sandbox_permissions needs a justification: say in one sentence why.')
  }
  const approval = ctx.get('approval')
  if (!approval) {
    return refuse(
      'SANDBOX_ESCALATION_DENIED',
      `escalation to ${to} refused: no approval service is available to ask the user.`,
    )
  }
  const decision = await approval.request(
    {
      ...(request.sessionId === undefined ? {} : { sessionId: request.sessionId }),
      ...(request.toolCallId === undefined ? {} : { toolCallId: request.toolCallId }),
      toolName: request.toolName,
      kind: 'escalation',
      summary: request.summary,
      reason: request.justification,
      details: { from, to, justification: request.justification },
    },
    request.signal,
  )
  if (decision !== 'allowed-once') {
    return refuse(
      'SANDBOX_ESCALATION_DENIED',
      `escalation to ${to} was not approved (${decision}). Do not retry it; work within the ${from} sandbox or ask the user.`,
    )
  }
  const policies = ctx.get('sandboxPolicy')
  if (!policies) return refuse('SANDBOX_ESCALATION_INVALID', 'no sandbox policy is configured.')
  const policy = policies.resolve(request.sessionId, to)
  return { ok: true, policy: Object.freeze({ ...policy, escalatedFrom: from }) }
}

function refuse(code: string, message: string): EscalationOutcome {
  return { ok: false, code, message }
}

/** Throws `SANDBOX_MODE_INVALID`. */
export function checkMode(value: unknown, where: string): SandboxMode {
  if (!isSandboxMode(value)) {
    throw new HarnessError(
      'SANDBOX_MODE_INVALID',
      `${where}: sandbox mode must be one of ${SANDBOX_MODES.join(', ')}`,
      {
        value: String(value),
      },
    )
  }
  return value
}

/**
 * The canonical form of a path: absolute, with the symlinks of its deepest existing ancestor
 * resolved (the part that does not exist yet is appended as written, `..` already normalized).
 */
export function canonicalPath(path: string): string {
  let head = resolve(path)
  const rest: string[] = []
  for (;;) {
    // Asked for paths that mostly do not exist (the protected names, on every prompt): `existsSync`
    // answers without the exception `realpathSync` throws for them. A dangling symlink fails both, so
    // its parent is resolved instead, as before.
    if (existsSync(head)) {
      try {
        return resolve(realpathSync.native(head), ...rest.reverse())
      } catch {
        // Removed between the two calls, or unreadable: resolve the parent.
      }
    }
    const parent = resolve(head, '..')
    if (parent === head) return resolve(path)
    rest.push(head.slice(parent.length).replace(/^\//, ''))
    head = parent
  }
}

/** True when canonical `path` is `root` or inside it. */
export function isWithin(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`)
}
