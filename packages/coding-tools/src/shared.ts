// Shared by the coding tools: descriptions loaded from ../descriptions, the call's workspace and
// identity, sandbox escalation of one call, and turning seam errors into model-facing failures.
import { readFileSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import type {} from '@dsh/agent/approval'
import { type ToolCallContext, ToolError } from '@dsh/agent/tools'
import { type Context, editDistance, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/session'
import type {} from '@dsh/world/fs'
import { requestEscalation, type SandboxPolicy, sandboxDenialHint } from '@dsh/world/sandbox'

/** The model-facing description of a tool, from `descriptions/<name>.md` beside `src/` and `dist/`. */
export function description(name: string): string {
  return readFileSync(new URL(`../descriptions/${name}.md`, import.meta.url), 'utf8').trim()
}

/** The schema fragment every mutating tool accepts for a per-call escalation. */
export const ESCALATION_PROPERTIES = {
  sandbox_permissions: {
    type: 'string',
    enum: ['workspace-write', 'danger-full-access'],
    description:
      'Only after a sandbox denial: run this one call with a wider sandbox mode. The user is asked to approve it once.',
  },
  justification: {
    type: 'string',
    description: 'Required with sandbox_permissions: one sentence on why the wider permission is needed.',
  },
} as const

export interface EscalationArgs {
  sandbox_permissions?: string
  justification?: string
}

/** The session's working directory, when the session is live; else undefined (provider default). */
export function workspaceOf(ctx: Context, call: ToolCallContext): string | undefined {
  if (!call.sessionId) return undefined
  const sessions = ctx.get('sessions')
  return sessions?.get(call.sessionId)?.header.cwd
}

/**
 * The policy for this call: `undefined` (the session's, decided by the provider) unless the model
 * asked for `sandbox_permissions`, which must then be approved. Throws `ToolError` on refusal.
 */
export async function callPolicy(
  ctx: Context,
  call: ToolCallContext,
  args: EscalationArgs,
  summary: string,
): Promise<SandboxPolicy | undefined> {
  if (args.sandbox_permissions === undefined) return undefined
  const policies = ctx.get('sandboxPolicy')
  if (!policies) {
    throw new ToolError(
      '[escalation refused] sandbox_permissions has no effect here: no sandbox is configured. Omit it.',
      'SANDBOX_ESCALATION_INVALID',
    )
  }
  const outcome = await requestEscalation(ctx, {
    ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
    toolCallId: call.callId,
    toolName: call.toolName,
    current: policies.resolve(call.sessionId),
    requested: args.sandbox_permissions,
    ...(args.justification === undefined ? {} : { justification: args.justification }),
    summary,
    signal: call.signal,
  })
  if (!outcome.ok) throw new ToolError(`[escalation refused] ${outcome.message}`, outcome.code)
  return outcome.policy
}

/**
 * A write refused with `FS_PROTECTED_PATH` (agent configuration, git hooks) goes to a person, with the
 * risk named. Returns the call's policy without that one path when they allow it once; otherwise throws
 * the refusal the model reads (headless without an approver: refused, and it says how to get it done).
 */
export async function approveProtected(
  ctx: Context,
  call: ToolCallContext,
  error: HarnessError,
  policy: SandboxPolicy | undefined,
): Promise<SandboxPolicy> {
  const { protected: guarded, why, target } = error.facts as { protected: string; why: string; target: string }
  const current = effectivePolicy(ctx, call, policy)
  const approval = ctx.get('approval')
  const answer =
    approval && current
      ? await approval.ask(
          {
            ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
            toolCallId: call.callId,
            toolName: call.toolName,
            kind: 'protected-path',
            summary: `${call.toolName === 'edit' ? 'Edit' : 'Write'} ${target}`,
            reason: `${guarded} ${why}`,
            details: { path: target, protected: guarded, why },
          },
          call.signal,
        )
      : undefined
  const decision = answer?.decision ?? 'unavailable'
  if (decision !== 'allowed-once' || !current) {
    // The person's own words, when they gave a reason, are what the model should act on.
    const why = answer?.reason ? `${decision}: ${answer.reason}` : decision
    throw new ToolError(
      `[protected: refused] ${error.message}; it was not approved (${why}). Do not write it another way: tell the user what the change is and let them make it (or run with an approver).`,
      'FS_PROTECTED_PATH',
    )
  }
  return Object.freeze({
    ...current,
    protectedPaths: Object.freeze(current.protectedPaths.filter((entry) => entry.path !== guarded)),
  })
}

/**
 * Runs a mutation under `policy`; when the fence says the target is protected, asks (above) and runs it
 * once more under the approved policy. A second protected path in the same call asks again.
 */
export async function withProtection<T>(
  ctx: Context,
  call: ToolCallContext,
  policy: SandboxPolicy | undefined,
  run: (policy: SandboxPolicy | undefined) => Promise<T>,
): Promise<T> {
  for (let current = policy; ; ) {
    try {
      return await run(current)
    } catch (error) {
      if (!HarnessError.is(error) || error.code !== 'FS_PROTECTED_PATH') throw error
      current = await approveProtected(ctx, call, error, current)
    }
  }
}

/** The policy a denied call ran under, for the denial hint. */
export function effectivePolicy(ctx: Context, call: ToolCallContext, policy: SandboxPolicy | undefined) {
  return policy ?? ctx.get('sandboxPolicy')?.resolve(call.sessionId)
}

/** Names close to `wanted`: a small edit distance, or the same name without its extension. */
function similarNames(wanted: string, names: string[]): string[] {
  const lower = wanted.toLowerCase()
  const stem = (name: string) => name.replace(/\.[^.]*$/, '')
  return names
    .map((name) => ({ name, d: editDistance(lower, name.toLowerCase()) }))
    .filter(
      ({ name, d }) =>
        d > 0 && (d <= Math.max(2, Math.floor(lower.length / 4)) || stem(name.toLowerCase()) === stem(lower)),
    )
    .sort((a, b) => a.d - b.d)
    .map(({ name }) => name)
}

/**
 * Turns an `FS_*` error into the failure text the tool descriptions promise. Anything that is not a
 * `HarnessError` is rethrown (the pipeline reports it as `TOOL_FAILED`).
 */
export async function fsFailure(
  ctx: Context,
  call: ToolCallContext,
  error: unknown,
  path: string,
  policy?: SandboxPolicy,
): Promise<never> {
  if (error instanceof ToolError) throw error
  if (!HarnessError.is(error)) throw error
  const code = error.code
  switch (code) {
    case 'FS_NOT_FOUND': {
      let hint = ''
      try {
        const fs = ctx.get('fs')
        const names = fs ? (await fs.list(dirname(path))).map((e) => e.name) : []
        const similar = similarNames(basename(path), names).slice(0, 5)
        if (similar.length) hint = ` Did you mean: ${similar.map((n) => `${dirname(path)}/${n}`).join(', ')}?`
      } catch {}
      throw new ToolError(`File not found: ${path}.${hint}`, code)
    }
    case 'FS_IS_DIRECTORY':
      throw new ToolError(`Is a directory: ${path}. Use ls to list it.`, code)
    case 'FS_NOT_DIRECTORY':
      throw new ToolError(`Not a directory: ${error.message}`, code)
    case 'FS_NOT_TEXT':
      throw new ToolError(`Not a text file: ${error.message}. It cannot be read or edited as text.`, code)
    case 'FS_TOO_LARGE':
      throw new ToolError(
        `File too large: ${error.message}. Search it with grep or use bash (e.g. sed -n '1,200p').`,
        code,
      )
    case 'FS_EXISTS':
      throw new ToolError(`[changed on disk] ${path} was created meanwhile. Read it, then retry.`, code)
    case 'FS_VERSION_CONFLICT':
      throw new ToolError(
        `[changed on disk] ${path} has changed since you read it. Read it again, then redo the change.`,
        code,
      )
    case 'FS_EDIT_NO_MATCH':
      throw new ToolError(
        `[no match] old_string was not found in ${path}. Read the file again and copy the text exactly (whitespace included, without line-number prefixes).`,
        code,
      )
    case 'FS_EDIT_AMBIGUOUS':
      throw new ToolError(
        `[ambiguous] old_string occurs ${error.facts.count} times in ${path}. Add surrounding lines to make it unique, or set replace_all to true.`,
        code,
      )
    case 'FS_EDIT_INVALID':
      throw new ToolError(`[invalid edit] ${error.message}.`, code)
    case 'FS_SANDBOX_DENIED': {
      const effective = effectivePolicy(ctx, call, policy)
      throw new ToolError(`${effective ? sandboxDenialHint(effective) : '[sandbox: denied]'} ${error.message}.`, code)
    }
    case 'FS_SECRET_DENIED':
      throw new ToolError(
        `[secret: refused] ${error.message}. Do not try to read it another way; if the task needs it, ask the user.`,
        code,
      )
    case 'FS_INVALID_PATTERN':
      throw new ToolError(`Invalid pattern: ${error.message}`, code)
    default:
      throw new ToolError(`${error.message}`, code)
  }
}

/** Cuts a long line for display. */
export function clip(line: string, max = 2000): string {
  return line.length > max ? `${line.slice(0, max)}… [line truncated]` : line
}
